"""The gpt-oss template's TypeScript tool layout (``Verified/Spec/HarmonyTools.lean``,
``toolsText``), and a reader of it (:func:`read_namespace`, Python only).

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

The layout forgets parts of a schema, so :func:`read_namespace` (what the parse uses to give
a render's tools back as JSON) is a right inverse, not an inverse: it returns tool definitions
that lay out to the same text.
"""

from __future__ import annotations

import json
from typing import Any

from lvt.errors import ConversationError
from lvt.jsonfmt import JArr, JNum, JObj, compact

__all__ = ["read_namespace", "tool_namespace", "ts_type"]

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


# -- reading a namespace back -------------------------------------------------------------
#
# The layout forgets (``integer`` and ``number`` both write ``number``, a ``type`` list and a
# ``oneOf`` can write the same text, keys the template does not read are dropped), so there is
# no inverse; :func:`read_namespace` is a right inverse: tool definitions whose namespace is
# the text, the schema read where the text is one the template writes for a plain schema,
# else the type text kept verbatim (``{"type": [TEXT]}`` writes ``TEXT``). Python only: the
# Lean parse returns the lowered form, where the namespace is text.

_HEAD = "## functions\n\nnamespace functions {\n\n"
_FOOT = "} // namespace functions"
_SIMPLE = {"string": {"type": "string"}, "number": {"type": "number"},
           "boolean": {"type": "boolean"}, "object": {"type": "object"}, "any": {},
           "string | null": {"type": "string", "nullable": True},
           "string[]": {"type": "array", "items": {"type": "string"}},
           "number[]": {"type": "array", "items": {"type": "number"}},
           "boolean[]": {"type": "array", "items": {"type": "boolean"}},
           "any[]": {"type": "array"}}


def _read_type(t: str) -> dict[str, Any]:
    """A schema whose ``ts_type`` is probably ``t`` (the caller checks): a plain type, a
    string enum, a flat nested object, else ``t`` verbatim."""
    if t in _SIMPLE:
        return dict(_SIMPLE[t])
    if len(t) >= 2 and t[0] == '"' and t[-1] == '"':
        return {"type": "string", "enum": t[1:-1].split('" | "')}
    if t.startswith("{\n") and t.endswith("}"):
        props: dict[str, Any] = {}
        required: list[str] = []
        for entry in t[2:-1].split(", "):
            name, sep, ty = entry.partition(": " + PROP_GAP)
            if not sep or ty not in _SIMPLE:
                return {"type": [t]}
            if not name.endswith("?"):
                required.append(name)
            props[name.removesuffix("?")] = dict(_SIMPLE[ty])
        return {"type": "object", "properties": props, "required": required}
    return {"type": [t]}


def _read_param(text: str) -> tuple[str, dict[str, Any], bool] | None:
    """One parameter (without its ``,\\n``): name, schema, required."""
    spec: dict[str, Any] = {}
    if text.startswith("// "):
        desc, nl, text = text[3:].partition("\n")
        if not nl:
            return None
        spec["description"] = desc
    name, sep, t = text.partition(": ")
    if not sep:
        return None
    k = t.rfind(", // default: ")
    dflt: Any = _NONE
    if k >= 0:
        t, d = t[:k], t[k + len(", // default: "):]
        try:
            dflt = d if t.startswith('"') else json.loads(d)
        except ValueError:
            t, dflt = t + ", // default: " + d, _NONE
    spec.update(_read_type(t))
    if dflt is not _NONE:
        spec["default"] = dflt
    return name.removesuffix("?"), spec, not name.endswith("?")


_NONE: Any = object()


def _read_params(block: str) -> dict[str, Any] | None:
    """The ``parameters`` of a tool from its parameter lines."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for line in block.split(",\n")[:-1] if block.endswith(",\n") else [None]:
        r = None if line is None else _read_param(line)
        if r is None or r[0] in props:
            return None
        props[r[0]] = r[1]
        if r[2]:
            required.append(r[0])
    return {"type": "object", "properties": props, "required": required}


def _tool(name: str, desc: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": desc,
                                             "parameters": params}}


def _read_tools(body: str) -> list[dict[str, Any]] | None:
    """The tools of a namespace body, read at the first ``\\ntype `` and ``}) => any;``."""
    tools = []
    pos = 0
    while pos < len(body):
        if not body.startswith("// ", pos):
            return None
        j = body.find("\ntype ", pos + 3)
        k = body.find(" = ", j + 6)
        if j < 0 or k < 0:
            return None
        desc, name = body[pos + 3:j], body[j + 6:k]
        if body.startswith("() => any;\n\n", k + 3):
            tools.append(_tool(name, desc, {"type": "object", "properties": {}}))
            pos = k + 3 + len("() => any;\n\n")
            continue
        if not body.startswith("(_: {\n", k + 3):
            return None
        e = body.find("}) => any;\n\n", k + 9)
        params = None if e < 0 else _read_params(body[k + 9:e])
        if params is None:
            return None
        tools.append(_tool(name, desc, params))
        pos = e + len("}) => any;\n\n")
    return tools


def _verbatim_tool(body: str) -> list[dict[str, Any]] | None:
    """One tool whose text is the whole body: the last ``\\ntype NAME = `` that leaves a tool
    tail, every earlier tool in its description, its parameter lines as one parameter (its
    name up to the first ``": "``, its type text verbatim)."""
    if not body.startswith("// "):
        return None
    j = body.rfind("\ntype ")
    while j >= 3:
        k = body.find(" = ", j + 6)
        while k >= 0:
            desc, name, tail = body[3:j], body[j + 6:k], body[k + 3:]
            if tail == "() => any;\n\n":
                return [_tool(name, desc, {"type": "object", "properties": {}})]
            if tail.startswith("(_: {\n") and tail.endswith(",\n}) => any;\n\n"):
                p, sep, t = tail[6:-len(",\n}) => any;\n\n")].partition(": ")
                if sep:
                    return [_tool(name, desc, {"type": "object", "properties": {
                        p: {"type": [t]}}, "required": [p]})]
            k = body.find(" = ", k + 1)
        j = body.rfind("\ntype ", 0, j)
    return None


def read_namespace(text: str) -> list[dict[str, Any]] | None:
    """Tool definitions whose :func:`tool_namespace` is ``text`` (``None``: no list of tools
    writes it). The layout is not injective, so this is one right inverse: schemas read back
    where the text is what the template writes for a plain schema (types, string enums,
    descriptions, defaults, required, flat nested objects), the type text kept verbatim
    (``{"type": [TEXT]}``) where not, and at worst one tool holding the whole text."""
    from lvt.jsonfmt import freeze

    if not (text.startswith(_HEAD) and text.endswith(_FOOT)):
        return None
    body = text[len(_HEAD):-len(_FOOT)]
    for read in (_read_tools, _verbatim_tool):
        tools = read(body)
        if tools:
            try:
                if tool_namespace([freeze(t) for t in tools]) == text:
                    return tools
            except ConversationError:
                pass
    return None
