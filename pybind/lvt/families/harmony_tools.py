"""The gpt-oss template's TypeScript tool layout (``Verified/Spec/Harmony.lean``, ``toolsText``).

The official gpt-oss chat template (``openai/gpt-oss-120b``) writes function tools in the
developer message as a TypeScript namespace with its macros ``render_tool_namespace`` and
``render_typescript_type``. This module reproduces them on frozen JSON
(:mod:`lvt.jsonfmt`), Jinja's semantics included: truthiness, ``x.key`` as a missing value on
anything but an object, and the whitespace the template's tags leave in the output (a
``"\\n" + 16 spaces`` before each property type of a nested object, ``" | \\n"`` between
``oneOf`` variants, 20 spaces before a variant default). A quirk of Jinja scoping is kept too:
``set has_object_variants = true`` inside the ``for`` loop never reaches the outer variable,
so a ``oneOf`` is always written variant by variant.

What the template cannot write (it raises: ``"// " + description`` on a non-string, a tool
without ``function``, an enum default that is not a string) is refused with
:class:`~lvt.errors.ConversationError`.
"""

from __future__ import annotations

from typing import Any

from lvt.errors import ConversationError
from lvt.jsonfmt import JArr, JNum, JObj, compact

__all__ = ["tool_namespace", "ts_type"]

#: ``x.key`` on a missing key or a non-object (Jinja's ``Undefined``).
MISSING: Any = object()

#: ``{{- ": " }}`` then a new line and the 16 spaces before ``{{ render_typescript_type(…) }}``.
PROP_GAP = "\n" + " " * 16
#: The 20 spaces before ``{{ "// default: " + variant.default|tojson }}``.
DEFAULT_GAP = " " * 20


def get(j: Any, k: str) -> Any:
    """``j.k`` / ``j[k]``: the member's value, or :data:`MISSING`."""
    if isinstance(j, JObj):
        for key, v in j.members:
            if key == k:
                return v
    return MISSING


def truthy(j: Any) -> bool:
    """Jinja's truth value of a JSON value (``MISSING`` and ``null`` are false)."""
    if j is MISSING or j is None:
        return False
    if isinstance(j, bool):
        return j
    if isinstance(j, JNum):  # `numTruthy`: a non-zero digit before any exponent (the text is
        # Python's, so this is `float(text) != 0`)
        mant = j.text.split("e")[0].split("E")[0]
        return any("1" <= c <= "9" for c in mant)
    if isinstance(j, str):
        return j != ""
    if isinstance(j, JArr):
        return len(j.items) > 0
    return len(j.members) > 0


def jstr(j: Any) -> str:
    """Jinja's string of a scalar (``join`` and ``~``): Python's ``str``."""
    if isinstance(j, str):
        return j
    if isinstance(j, bool):
        return "True" if j else "False"
    if j is None:
        return "None"
    if isinstance(j, JNum):
        return j.text
    raise ConversationError(None, "gpt-oss tool schema: the template would write a nested "
                            f"JSON value as text ({compact(j)})")


def cat(j: Any, what: str) -> str:
    """``"…" + j``: the template concatenates, so ``j`` must be a string."""
    if isinstance(j, str):
        return j
    shown = "missing" if j is MISSING else compact(j)
    raise ConversationError(None, f"gpt-oss tool schema: {what} must be a string (the template "
                            f"concatenates it; got {shown})")


def required_of(j: Any) -> Any:
    """``param_spec.required or []``."""
    r = get(j, "required")
    return r if truthy(r) else JArr(())


def is_required(name: str, req: Any) -> bool:
    """``name in req`` (a list, a string or an object, as Jinja's ``in``)."""
    if isinstance(req, JArr):
        return any(isinstance(x, str) and x == name for x in req.items)
    if isinstance(req, str):
        return name in req
    if isinstance(req, JObj):
        return any(k == name for k, _ in req.members)
    return False


def _is(j: Any, s: str) -> bool:
    return isinstance(j, str) and j == s


def ts_type(spec: Any) -> str:
    """``render_typescript_type(param_spec, …)`` (``required_params`` is never read)."""
    ty = get(spec, "type")
    if _is(ty, "array"):
        items = get(spec, "items")
        if truthy(items):
            it = get(items, "type")
            if _is(it, "string"):
                out = "string[]"
            elif _is(it, "number") or _is(it, "integer"):
                out = "number[]"
            elif _is(it, "boolean"):
                out = "boolean[]"
            else:
                inner = ts_type(items)
                # `inner_type == "object | object" or inner_type|length > 50`
                out = "any[]" if inner == "object | object" or len(inner) > 50 else inner + "[]"
        else:
            out = "any[]"
        return out + (" | null" if truthy(get(spec, "nullable")) else "")
    if isinstance(ty, JArr) and ty.items:
        # `param_spec.type | join(" | ")`, or `param_spec.type[0]` for one
        return " | ".join(jstr(x) for x in ty.items) if len(ty.items) > 1 else jstr(ty.items[0])
    one = get(spec, "oneOf")
    if truthy(one):
        if not isinstance(one, JArr):
            raise ConversationError(None, "gpt-oss tool schema: oneOf must be a list")
        parts = []
        for k, v in enumerate(one.items):
            s = ts_type(v)
            d = get(v, "description")
            if truthy(d):
                s += "// " + cat(d, "a oneOf variant's description")
            dv = get(v, "default")
            if dv is not MISSING:
                s += DEFAULT_GAP + "// default: " + compact(dv)
            if k != len(one.items) - 1:
                s += " | \n"
            parts.append(s)
        return "".join(parts)
    if _is(ty, "string"):
        enum = get(spec, "enum")
        if truthy(enum):
            if not isinstance(enum, JArr):
                raise ConversationError(None, "gpt-oss tool schema: enum must be a list")
            return '"' + '" | "'.join(jstr(x) for x in enum.items) + '"'
        return "string" + (" | null" if truthy(get(spec, "nullable")) else "")
    if _is(ty, "number") or _is(ty, "integer"):
        return "number"
    if _is(ty, "boolean"):
        return "boolean"
    if _is(ty, "object"):
        props = get(spec, "properties")
        if truthy(props):
            if not isinstance(props, JObj):
                raise ConversationError(None, "gpt-oss tool schema: properties must be an "
                                        "object")
            req = required_of(spec)
            body = ", ".join(
                name + ("" if is_required(name, req) else "?") + ": " + PROP_GAP + ts_type(p)
                for name, p in props.members)
            return "{\n" + body + "}"
        return "object"
    return "any"


def _param(name: str, spec: Any, req: Any) -> str:
    """One parameter line of ``render_tool_namespace``."""
    out = ""
    d = get(spec, "description")
    if truthy(d):
        out += "// " + cat(d, f"the description of parameter {name!r}") + "\n"
    out += name + ("" if is_required(name, req) else "?") + ": " + ts_type(spec)
    dv = get(spec, "default")
    if dv is not MISSING:
        if truthy(get(spec, "enum")):
            out += ", // default: " + cat(dv, f"the default of the enum parameter {name!r}")
        elif truthy(get(spec, "oneOf")):
            out += "// default: " + cat(dv, f"the default of the oneOf parameter {name!r}")
        else:
            out += ", // default: " + compact(dv)
    return out + ",\n"


def tool_text(tool: Any, k: int) -> str:
    """One tool of ``render_tool_namespace``: ``// DESC``, ``type NAME = …;`` and a blank line."""
    fn = get(tool, "function")
    if not isinstance(fn, JObj):
        raise ConversationError(None, f"tool {k}: gpt-oss writes tools given as "
                                "{'type': 'function', 'function': {...}} (the template reads "
                                "tool.function)")
    try:
        out = "// " + cat(get(fn, "description"), "the description") + "\n"
        out += "type " + cat(get(fn, "name"), "the name") + " = "
        params = get(fn, "parameters")
        props = get(params, "properties")
        if truthy(params) and truthy(props):
            if not isinstance(props, JObj):
                raise ConversationError(None, "parameters.properties must be an object")
            req = required_of(params)
            out += "(_: {\n" + "".join(_param(n, s, req) for n, s in props.members)
            out += "}) => any;\n\n"
        else:
            out += "() => any;\n\n"
    except ConversationError as e:
        raise ConversationError(None, f"tool {k}: {e.reason}") from None
    return out


def tool_namespace(tools: Any) -> str:
    """``render_tool_namespace("functions", tools)``."""
    body = "".join(tool_text(t, k) for k, t in enumerate(tools))
    return "## functions\n\nnamespace functions {\n\n" + body + "} // namespace functions"
