module

public import Verified.Spec.Qwen
public import Verified.Spec.Llama

public section

/-!
# FFI wire format: the encoders

How each value crosses the FFI as bytes (the layout is documented in `Verified/Ffi.lean`):
the version byte `wireVersion`, the encoders of requests (as the Python side builds them,
`lvt/runtime/wire.py`) and of answers (as the exports write them), the formats the library
serves (`Fam`) and the error codes (`WireError`). Their inverses are in `Ffi/Decode.lean`;
`Thm/Ffi.lean` proves that decoding inverts encoding.
-/

namespace Verified
namespace Ffi

/-- Raw bytes, as a list (what the kernel can evaluate and the proofs talk about). -/
abbrev Bytes := List UInt8

/-- The wire-format version the exports speak (`LVT_WIRE_VERSION` of `ffi/lvt.h`). -/
@[expose] def wireVersion : UInt8 := 4

/-! ## Encoders -/

/-- A natural number as four little-endian bytes (taken modulo `2 ^ 32`). -/
@[expose] def u32le (n : Nat) : Bytes :=
  [n.toUInt8, (n / 256).toUInt8, (n / 65536).toUInt8, (n / 16777216).toUInt8]

/-- A Boolean as one byte. -/
@[expose] def encBool (b : Bool) : Bytes := [if b then 1 else 0]

/-- A list: its length, then its elements. -/
@[expose] def encList {α : Type} (enc : α → Bytes) (xs : List α) : Bytes :=
  u32le xs.length ++ xs.flatMap enc

/-- An option: `0`, or `1` and the value. -/
@[expose] def encOpt {α : Type} (enc : α → Bytes) : Option α → Bytes
  | none => [0]
  | some a => 1 :: enc a

/-- A token list. -/
@[expose] def encToks (ts : List Token) : Bytes := encList u32le ts

/-- Text: its UTF-8 byte count, then the bytes. -/
@[expose] def encText (cs : Chars) : Bytes := u32le (utf8 cs).length ++ utf8 cs

/-- A pair of ids. -/
@[expose] def encPair (p : Token × Token) : Bytes := u32le p.1 ++ u32le p.2

mutual
/-- A JSON value. -/
@[expose] def encJson : Json → Bytes
  | .null => [0]
  | .bool false => [1]
  | .bool true => [2]
  | .num s => 3 :: encText s
  | .str s => 4 :: encText s
  | .arr xs => 5 :: (u32le xs.length ++ encJsons xs)
  | .obj kvs => 6 :: (u32le kvs.length ++ encMembers kvs)

/-- The items of an array. -/
@[expose] def encJsons : List Json → Bytes
  | [] => []
  | x :: xs => encJson x ++ encJsons xs

/-- The members of an object. -/
@[expose] def encMembers : List (Chars × Json) → Bytes
  | [] => []
  | (k, v) :: kvs => encText k ++ encJson v ++ encMembers kvs
end

/-- The wire byte of a role. -/
@[expose] def roleByte : Role → UInt8
  | .system => 0
  | .developer => 1
  | .user => 2
  | .assistant => 3
  | .tool => 4

/-- A payload. -/
@[expose] def encPayload : Payload → Bytes
  | .text s => 0 :: encText s
  | .tokens ts => 1 :: encToks ts

/-- A block. -/
@[expose] def encBlock : Block → Bytes
  | .plain p => 0 :: encPayload p
  | .reasoning p => 1 :: encPayload p
  | .toolCall n a i => 2 :: (encText n ++ encText a ++ encOpt encText i)
  | .sampled ts => 3 :: encToks ts

/-- A message. -/
@[expose] def encMsg (m : Message) : Bytes := roleByte m.role :: encList encBlock m.blocks

/-- A conversation. -/
@[expose] def encConv (c : Conversation) : Bytes :=
  encBool c.addGenerationPrompt ++ encOpt (encList encJson) c.tools ++
    encList encMsg c.messages

/-- The wire byte of a Qwen mode. -/
@[expose] def modeByte : Qwen.Mode → UInt8
  | .v25 => 0
  | .exact => 1
  | .stable => 2

/-- A Qwen format instance. -/
@[expose] def encQwenFmt (f : Qwen.QwenFmt) : Bytes :=
  u32le f.ids.imStart ++ u32le f.ids.imEnd ++ u32le f.ids.callOpen ++ u32le f.ids.callClose ++
    encOpt encPair f.ids.toolResponse ++ encOpt encPair f.ids.think ++ encToks f.ids.extra ++
    modeByte f.mode :: (encBool f.enableThinking ++ encOpt encText f.defaultSystem ++
      encBool f.promptThink)

/-- A Llama format instance. -/
@[expose] def encLlamaFmt (f : Llama.LlamaFmt) : Bytes :=
  u32le f.ids.bos ++ u32le f.ids.startHeader ++ u32le f.ids.endHeader ++ u32le f.ids.eot ++
    encToks f.ids.extra ++ encText f.date ++ encBool f.toolsInUser

/-- The formats the library serves. -/
inductive Fam where
  | qwen (f : Qwen.QwenFmt)
  | llama (f : Llama.LlamaFmt)

/-- The `Format` of a family instance. -/
@[expose] def Fam.format : Fam → Format
  | .qwen f => Qwen.format f
  | .llama f => Llama.format f

/-- A format on the wire: the family byte and the parameters. -/
@[expose] def encFam : Fam → Bytes
  | .qwen f => 0 :: encQwenFmt f
  | .llama f => 1 :: encLlamaFmt f

/-- One symbol (a character as a one-character run). -/
@[expose] def encSym : Sym → Bytes
  | .ctrl t => 0 :: u32le t
  | .ch c => 1 :: encText [c]
  | .tok t => 2 :: u32le t

/-- A symbol stream, one entry per symbol (the decoder also accepts longer runs). -/
@[expose] def encSyms (s : List Sym) : Bytes := encList encSym s

/-- A layout request, as the Python side builds it. -/
@[expose] def encLayoutRequest (fam : Fam) (c : Conversation) : Bytes :=
  wireVersion :: (encFam fam ++ encConv c)

/-- An unlayout request, as the Python side builds it. -/
@[expose] def encUnlayoutRequest (fam : Fam) (s : List Sym) : Bytes :=
  wireVersion :: (encFam fam ++ encSyms s)

/-! ### Answers -/

/-- The content of an item. -/
@[expose] def encPiece : Piece → Bytes
  | .ctrl t => 0 :: u32le t
  | .text cs => 1 :: encText cs
  | .toks ts => 2 :: encToks ts

/-- An item: piece, owner, learn. -/
@[expose] def encItem (i : Item) : Bytes :=
  encPiece i.piece ++ u32le i.ann.owner ++ encBool i.ann.learn

/-- The answer to a layout request: `none` when the format cannot express the conversation. -/
@[expose] def encLayoutAnswer : Option (List Item) → Bytes
  | none => [0, 0]
  | some is => 0 :: 1 :: encList encItem is

/-- A lowered payload. -/
@[expose] def encLPay : LPay → Bytes
  | .text cs => 0 :: encText cs
  | .toks ts => 1 :: encToks ts

/-- A Qwen tool call. -/
@[expose] def encCall (k : Qwen.Call) : Bytes := encText k.name ++ encText k.args

/-- A Qwen tool result and its owner. -/
@[expose] def encResult (r : LPay × Nat) : Bytes := encLPay r.1 ++ u32le r.2

/-- A Qwen turn. -/
@[expose] def encQTurn : Qwen.QTurn → Bytes
  | .plain r p o => 0 :: (match r with | .system => 0 | .user => 1) :: (encLPay p ++ u32le o)
  | .toolsSystem sys tools o => 1 :: (encOpt encLPay sys ++ encList encText tools ++ u32le o)
  | .assistant th c sep ks o =>
      2 :: (encOpt encLPay th ++ encLPay c ++ encBool sep ++ encList encCall ks ++ u32le o)
  | .toolGroup rs => 3 :: encList encResult rs
  | .sampled ts o => 4 :: (encToks ts ++ u32le o)

/-- A lowered Qwen conversation. -/
@[expose] def encQConv (q : Qwen.QConv) : Bytes :=
  encList encQTurn q.turns ++ encOpt u32le q.prompt

/-- The wire byte of a Llama header role. -/
@[expose] def lroleByte : Llama.LRole → UInt8
  | .system => 0
  | .user => 1
  | .assistant => 2
  | .developer => 3

/-- A Llama turn. -/
@[expose] def encLTurn : Llama.LTurn → Bytes
  | .system env tools sys o => 0 :: (encBool env ++ encList encText tools ++ encLPay sys ++ u32le o)
  | .userTools tools u o => 1 :: (encList encText tools ++ encLPay u ++ u32le o)
  | .plain r p o => 2 :: lroleByte r :: (encLPay p ++ u32le o)
  | .call n a o => 3 :: (encText n ++ encText a ++ u32le o)
  | .ipython p o => 4 :: (encLPay p ++ u32le o)
  | .sampled ts o => 5 :: (encToks ts ++ u32le o)

/-- A lowered Llama conversation. -/
@[expose] def encLConv (q : Llama.LConv) : Bytes :=
  encList encLTurn q.turns ++ encOpt u32le q.prompt

/-- Why a request could not be decoded. -/
inductive WireError where
  | empty
  | version
  | family
  | format
  | conversation
  | symbols
  | trailing
  deriving DecidableEq, Repr

/-- The wire code of an error. -/
@[expose] def WireError.code : WireError → UInt8
  | .empty => 0
  | .version => 1
  | .family => 2
  | .format => 3
  | .conversation => 4
  | .symbols => 5
  | .trailing => 6

/-- The answer to a request that could not be decoded: status `1` and the code. -/
@[expose] def encError (e : WireError) : Bytes := [1, e.code]

end Ffi
end Verified

end
