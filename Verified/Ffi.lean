module

public import Verified.Ffi.Decode

public section

/-!
# FFI entry points: bytes in, bytes out (wire version 4)

The shared library that the Python package loads exports two C functions, both
`ByteArray → ByteArray`:

* `lvt_layout_bytes`: a format (family and parameters) and a conversation with text payloads
  in, `(Format.lower c).map Format.layout` out: whether the format can express the conversation
  and, if so, the items of its render (control ids, text, verbatim tokens, owner, loss bit);
* `lvt_unlayout_bytes`: a format and a symbol stream in, `Format.unlayout s` out: the lowered
  conversation (owners 0) or "not a render".

The Lean side has no tokenizer: Python encodes the text spans of the items
(`core.encode_items`, `encodeItems` of `Spec/Span.lean`) and reads tokens back as symbols
(`core.decode_syms`, `decodeSyms`) around these calls, so that
`Format.render codec c = (layout answer).map (encodeItems codec)` and
`Format.parse codec ts = (decodeSyms codec reserved ts).bind unlayout` (`Thm/Ffi.lean`).
`layoutBytes_eq` and `unlayoutBytes_eq` state, by `rfl`, that each export is "decode the
request, run the spec function, encode the answer".

## Wire layout (version 4)

Integers are little-endian `u32`. A *bool* is one byte `0`/`1`. A *list* of `x` is a `u32`
count and that many `x`. *Tokens* are a list of `u32`. *Text* is a `u32` byte count and that
many bytes of UTF-8 (decoded with `utf8Decode`). An *option* of `x` is a byte `0`, or a byte
`1` and an `x`.

* **format**: a family byte, then
  - `0` Qwen: `u32` `imStart imEnd callOpen callClose`, option of two `u32` `toolResponse`,
    option of two `u32` `think`, tokens `extra`, mode byte (`0` v25, `1` exact, `2` stable),
    bool `enableThinking`, option of text `defaultSystem`, bool `promptThink`;
  - `1` Llama: `u32` `bos startHeader endHeader eot`, tokens `extra`, text `date`,
    bool `toolsInUser`.
* **json**: a tag byte: `0` null, `1` false, `2` true, `3` num (text), `4` str (text),
  `5` array (list of json), `6` object (list of text key and json value).
* **payload**: `0` text, or `1` tokens. **block**: `0` plain (payload), `1` reasoning
  (payload), `2` tool call (text name, text args), `3` sampled (tokens).
  **message**: a role byte (`0` system, `1` developer, `2` user, `3` assistant, `4` tool) and a
  list of blocks. **conversation**: bool `addGenerationPrompt`, option of a list of json
  `tools`, list of messages.
* **symbols**: a list of entries: `0` control (`u32`), `1` a run of characters (text),
  `2` verbatim token (`u32`); the stream is the entries' symbols in order.
* **layout request**: version byte `4`, format, conversation, nothing after.
  **unlayout request**: version byte `4`, format, symbols, nothing after.
* **layout answer**: status `0`, then `0` (the format cannot express the conversation) or `1`
  and a list of items; an item is a piece (`0` control `u32`, `1` text, `2` tokens), a `u32`
  owner and a bool learn.
* **unlayout answer**: status `0`, then an option of the lowered conversation: a list of turns
  and an option of a `u32` prompt owner. A lowered payload is `0` text or `1` tokens.
  Qwen turns: `0` plain (role byte `0` system / `1` user, payload, owner), `1` tools system
  (option of payload, list of text, owner), `2` assistant (option of payload think, payload
  content, bool sep, list of calls (text name, text args), owner), `3` tool group (list of
  payload and `u32` owner), `4` sampled (tokens, owner). Llama turns: `0` system (bool env, list
  of text, payload, owner), `1` user tools (list of text, payload, owner), `2` plain (role byte
  `0` system / `1` user / `2` assistant / `3` developer, payload, owner), `3` call (text, text,
  owner), `4` ipython (payload, owner), `5` sampled (tokens, owner).
* **error answer**: status `1` and one byte, the `WireError` code (`0` empty, `1` version,
  `2` family, `3` format, `4` conversation, `5` symbols, `6` trailing).

The encoders (`wireVersion`, requests, answers, `Fam`, `WireError`) are in `Ffi/Encode.lean`,
the decoders in `Ffi/Decode.lean`; this file holds the two services and the exports. Every
function is total and structurally recursive (JSON, the only nested structure, is read with
fuel = the request length); list readers are tail recursive.
-/

namespace Verified
namespace Ffi

/-! ## The two services, on byte lists -/

/-- The spec function behind `lvt_layout_bytes`: lower, then lay out. -/
@[expose] def layoutOf (fam : Fam) (c : Conversation) : Option (List Item) :=
  (fam.format.lower c).map fam.format.layout

/-- The answer to an unlayout request for a family. -/
@[expose] def unlayoutAnswer : Fam → List Sym → Bytes
  | .qwen f, s => 0 :: encOpt encQConv (Qwen.unlayout f s)
  | .llama f, s => 0 :: encOpt encLConv (Llama.unlayout f s)

/-- Layout service: decode, lower and lay out, encode the items. -/
@[expose] def layoutService (req : Bytes) : Bytes :=
  match readLayoutRequest req with
  | .ok (fam, c) => encLayoutAnswer (layoutOf fam c)
  | .error e => encError e

/-- Unlayout service: decode, read the symbols back, encode the lowered conversation. -/
@[expose] def unlayoutService (req : Bytes) : Bytes :=
  match readUnlayoutRequest req with
  | .ok (fam, s) => unlayoutAnswer fam s
  | .error e => encError e

/-! ## The exports -/

/-- Bytes of a list, as a `ByteArray`. -/
@[expose] def toByteArray (bs : Bytes) : ByteArray := ⟨bs.toArray⟩

/-- C symbol `lvt_layout_bytes`: decode the request, run the proven `Format.lower` and
`Format.layout`, encode the items. -/
@[expose, export lvt_layout_bytes]
def layoutBytes (req : ByteArray) : ByteArray :=
  match readLayoutRequest req.data.toList with
  | .ok (fam, c) => toByteArray (encLayoutAnswer (layoutOf fam c))
  | .error e => toByteArray (encError e)

/-- C symbol `lvt_unlayout_bytes`: decode the request, run the proven `Format.unlayout`, encode
the lowered conversation. -/
@[expose, export lvt_unlayout_bytes]
def unlayoutBytes (req : ByteArray) : ByteArray :=
  match readUnlayoutRequest req.data.toList with
  | .ok (fam, s) => toByteArray (unlayoutAnswer fam s)
  | .error e => toByteArray (encError e)

end Ffi
end Verified

end
