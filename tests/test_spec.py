"""The reference backend (lvt.spec) on hand-checked vectors."""

from __future__ import annotations

import pytest

from lvt import formats as F
from lvt import spec
from lvt.model import (
    BlockKind,
    Conversation,
    Message,
    Plain,
    Reasoning,
    Role,
    Text,
    Tokens,
    ToolCall,
)
from lvt.spec import Cell, Ctrl, Lit, Src

B = F.CHAR_BASE


def cc(s: str) -> tuple[int, ...]:
    return tuple(F.char_codec.encode(s))


def ref(name: str) -> spec.EncFormat:
    fs = F.get_spec(name)
    return spec.encode_format(fs.build(F.REFERENCE_IDS[name]), F.char_codec.encode)


@pytest.mark.parametrize("name", F.format_names())
def test_shipped_formats_are_well_formed(name: str) -> None:
    assert spec.wf(ref(name))


def test_basic_list_functions() -> None:
    assert spec.is_prefix_b((), (1,))
    assert spec.is_prefix_b((1, 2), (1, 2, 3))
    assert not spec.is_prefix_b((1, 2), (1,))
    assert spec.incomparable((1, 2), (1, 3)) and not spec.incomparable((1,), (1, 3))
    assert spec.leads_reserved([5], (5, 1)) and not spec.leads_reserved([5], ())
    assert spec.strip_prefix((1, 2), (1, 2, 3)) == (3,)
    assert spec.strip_prefix((1, 2), (1,)) is None
    assert spec.strip_prefix((), (4,)) == (4,)
    assert spec.take_free([9], (1, 2, 9, 3)) == ((1, 2), (9, 3))
    assert spec.take_free([9], (1, 2)) == ((1, 2), ())
    assert spec.strip_open((), (1,)) is None
    assert spec.all_free([1], (2, 3)) and not spec.all_free([1], (2, 1))


def test_src_learned() -> None:
    assert {s for s in Src if s.learned} == {Src.DELIM, Src.PAYLOAD, Src.EOT}


def test_encode_format_chatml() -> None:
    f = ref("qwen2.5")
    ids = F.qwen25_reference
    assert f.header[Role.USER] == (ids.im_start, *cc("user\n"))
    assert f.header[Role.DEVELOPER] == ()
    assert f.footer[Role.ASSISTANT] == (ids.im_end, *cc("\n"))
    assert f.block_open[BlockKind.TOOL_CALL] == (ids.tool_call_open, *cc("\n"))
    assert f.block_open[BlockKind.PLAIN] == ()
    assert f.reserved == (151644, 151645, 151643, 151657, 151658)


def test_render_chatml_by_hand() -> None:
    f = ref("qwen2.5")
    s, e = 151644, 151645
    c = Conversation(
        [
            Message(Role.USER, [Plain(Tokens(cc("hi")))]),
            Message(Role.ASSISTANT, [Plain(Tokens(cc("yo")))]),
        ],
        add_generation_prompt=True,
    )
    cells = spec.render_tok(f, c)
    want_ids = [s, *cc("user\n"), *cc("hi"), e, *cc("\n"),
                s, *cc("assistant\n"), *cc("yo"), e, *cc("\n"),
                s, *cc("assistant\n")]
    assert spec.ids(cells) == want_ids
    n_user = 1 + 5 + 2 + 2
    n_asst_header = 1 + 10
    mask = [False] * n_user + [False] * n_asst_header + [True, True, True, False] + [False] * 11
    assert spec.mask(cells) == mask
    assert spec.owners(cells) == [0] * n_user + [1] * (n_asst_header + 4) + [2] * 11
    assert cells[n_user + n_asst_header + 2] == Cell(e, Src.EOT, 1, True)
    assert cells[-1].src is Src.PROMPT
    assert spec.parse(f, want_ids) == c


def test_render_tool_call_with_separator() -> None:
    f = ref("mistral-v7")
    m = F.mistral_reference
    c = Conversation([Message(Role.ASSISTANT, [ToolCall(Tokens(cc("f")), Tokens(cc("{}")))])])
    ids = spec.ids(spec.render_tok(f, c))
    assert ids == [m.bos, m.inst_end, m.tool_calls, *cc("f"), m.args, *cc("{}"), m.eos]
    assert spec.parse(f, ids) == c


def test_parse_rejects_and_generation_prompt() -> None:
    f = ref("llama3")
    assert spec.parse(f, []) is None  # BOS missing
    bos = F.llama3_reference.begin_of_text
    assert spec.parse(f, [bos]) == Conversation((), False)
    assert spec.parse(f, [bos, *f.header[Role.ASSISTANT]]) == Conversation((), True)
    assert spec.parse(f, [bos, 5]) is None
    assert spec.parse(f, [bos, *f.header[Role.USER], B + 1]) is None  # no end of turn


def test_parse_fuel_runs_out_only_on_non_renders() -> None:
    f = ref("gemma")
    assert spec.parse_msgs(f, 0, ()) is None
    assert spec.parse_blocks(f, 0, ()) is None
    assert spec.parse_msgs(f, 1, ()) == ([], False)


def test_block_rules() -> None:
    f = ref("qwen3")  # bare plain blocks, closed reasoning blocks, tool call without separator
    assert not spec.block_ok(f, Plain(Tokens(())))
    assert spec.block_ok(f, Reasoning(Tokens(())))
    assert not spec.block_ok(f, ToolCall(Tokens(cc("n")), Tokens(())))
    assert spec.block_ok(f, ToolCall(Tokens(()), Tokens(cc("x"))))
    assert not spec.block_ok(f, Plain(Tokens((151644,))))
    llama = ref("llama3")
    assert not spec.block_ok(llama, Reasoning(Tokens(cc("x"))))
    # harmony: plain blocks have an opener but no closer, so a plain block after a plain
    # block is fine (the opener separates them), yet it ends with its payload
    h = ref("gpt-oss")
    assert spec.blocks_ok(h, False, [Plain(Tokens(cc("a"))), Plain(Tokens(cc("b")))])
    assert spec.open_end(h, Plain(Tokens(())))
    # deepseek-r1: reasoning has a closer; plain is bare; a plain after a plain merges
    d = ref("deepseek-r1")
    assert not spec.blocks_ok(d, False, [Plain(Tokens(cc("a"))), Plain(Tokens(cc("b")))])
    assert spec.blocks_ok(d, False, [Reasoning(Tokens(cc("a"))), Plain(Tokens(cc("b")))])
    assert not spec.msg_ok(d, Message(Role.SYSTEM, []))


def test_wf_failures() -> None:
    good = ref("qwen2.5")

    def with_(**kw):
        fields = dict(reserved=good.reserved, bos=good.bos, header=good.header,
                      footer=good.footer, block_open=good.block_open,
                      block_close=good.block_close, tool_sep=good.tool_sep)
        fields.update(kw)
        return spec.EncFormat(**fields)

    assert spec.wf(with_())
    assert not spec.wf(with_(header={**good.header, Role.ASSISTANT: ()}))
    assert not spec.wf(with_(footer={**good.footer, Role.ASSISTANT: ()}))
    assert not spec.wf(with_(header={**good.header, Role.USER: cc("user")}))  # not guarded
    same = good.header[Role.SYSTEM]
    assert not spec.wf(with_(header={**good.header, Role.USER: same}))  # comparable headers
    clash = {**good.block_open, BlockKind.REASONING: good.footer[Role.USER]}
    assert not spec.wf(with_(block_open=clash))
    assert not spec.wf(with_(tool_sep=cc("x")))


def test_piece_encoding() -> None:
    assert spec.piece_to_tokens(F.char_codec.encode, Ctrl(7)) == (7,)
    assert spec.encode_all(F.char_codec.encode, [Ctrl(7), Lit("ab")]) == (7, B + 97, B + 98)


def test_decode_payload_char_codec() -> None:
    assert spec.decode_payload(F.char_codec, cc("héllo")) == Text("héllo")
    assert spec.decode_payload(F.char_codec, ()) == Text("")
    # a token below the base decodes to NUL, which re-encodes differently: kept as tokens
    assert spec.decode_payload(F.char_codec, (5,)) == Tokens((5,))
    c = Conversation([Message(Role.USER, [Plain(Tokens(cc("x")))])])
    assert spec.decode_conversation(F.char_codec, c).messages[0].blocks == (Plain(Text("x")),)


def test_reference_backend_needs_tokens() -> None:
    with pytest.raises(TypeError):
        spec.render_tok(ref("qwen2.5"), Conversation([Message.text("user", "x")]))


def test_format_equality_and_key() -> None:
    assert ref("qwen3") == ref("qwen3")
    assert hash(ref("qwen3")) == hash(ref("qwen3"))
    assert ref("qwen3") != ref("qwen2.5")
