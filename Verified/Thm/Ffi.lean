module

public import Verified.Ffi

public section

/-!
# The FFI byte codec round-trips

`Verified/Ffi.lean` states by `rfl` that each export is "decode, run the proven Spec function,
encode". This file proves that the decoder inverts the encoder that the Python side mirrors
(`pybind/lvt/wire.py`): a render request built from a format and a conversation decodes to
exactly that format and conversation, as long as every id and every count fits in a `u32`
(which the Python encoder checks before sending). So the native library renders the
conversation the caller meant, not some other one.
-/

namespace Verified
namespace Ffi

/-- A token list fits the wire: every id and the length are below `2 ^ 32`. -/
abbrev FitsToks (ts : List Token) : Prop := Fits ts ∧ ts.length < 4294967296

/-- A block fits the wire. -/
@[expose] def blockFits : Block (List Token) → Prop
  | .plain p => FitsToks p
  | .reasoning p => FitsToks p
  | .toolCall n a => FitsToks n ∧ FitsToks a

/-- A message fits the wire: its blocks do, and so does their count. -/
@[expose] def msgFits (m : Message (List Token)) : Prop :=
  (∀ b ∈ m.blocks, blockFits b) ∧ m.blocks.length < 4294967296

/-- A conversation fits the wire: its messages do, and so does their count. -/
@[expose] def convFits (c : Conversation (List Token)) : Prop :=
  (∀ m ∈ c.messages, msgFits m) ∧ c.messages.length < 4294967296

/-- A format fits the wire: each of its 19 token lists does. -/
@[expose] def formatFits (f : EncFormat) : Prop := ∀ ts ∈ formatLists f, FitsToks ts

theorem readListsAux_enc (ls : List (List Token)) (acc : List (List Token)) (rest : Bytes)
    (h : ∀ ts ∈ ls, FitsToks ts) :
    readListsAux ls.length acc (ls.flatMap encToks ++ rest) = some (acc.reverse ++ ls, rest) := by
  induction ls generalizing acc with
  | nil => simp [readListsAux]
  | cons t ts ih =>
    have ht : FitsToks t := h t (by simp)
    have hts : ∀ x ∈ ts, FitsToks x := fun x hx => h x (by simp [hx])
    simp [readListsAux, readToks_encToks t _ ht.1 ht.2, ih (t :: acc) hts]

/-- The format built from the 19 lists of a format is that format. -/
theorem formatOfLists_formatLists (f : EncFormat) : formatOfLists (formatLists f) = some f := by
  cases f
  exact congrArg some (by congr 1 <;> funext x <;> cases x <;> rfl)

/-- A format reads back as itself. -/
theorem readFormat_encFormat (f : EncFormat) (rest : Bytes) (h : formatFits f) :
    readFormat (encFormat f ++ rest) = some (f, rest) := by
  have hl : readListsAux 19 [] (encFormat f ++ rest) = some (formatLists f, rest) := by
    simpa using readListsAux_enc (formatLists f) [] rest h
  simp [readFormat, hl, formatOfLists_formatLists]

theorem roleOfByte_roleByte (r : Role) : roleOfByte (roleByte r) = some r := by
  cases r <;> rfl

/-- A block reads back as itself. -/
theorem readBlock_encBlock (b : Block (List Token)) (rest : Bytes) (h : blockFits b) :
    readBlock (encBlock b ++ rest) = some (b, rest) := by
  cases b with
  | plain p =>
    simp [encBlock, kindByte, readBlock, readToks_encToks p rest h.1 h.2]
  | reasoning p =>
    simp [encBlock, kindByte, readBlock, readToks_encToks p rest h.1 h.2]
  | toolCall n a =>
    simp [encBlock, kindByte, readBlock, readToks_encToks n _ h.1.1 h.1.2,
      readToks_encToks a rest h.2.1 h.2.2]

theorem readBlocksAux_enc (bs acc : List (Block (List Token))) (rest : Bytes)
    (h : ∀ b ∈ bs, blockFits b) :
    readBlocksAux bs.length acc (bs.flatMap encBlock ++ rest) = some (acc.reverse ++ bs, rest) := by
  induction bs generalizing acc with
  | nil => simp [readBlocksAux]
  | cons b bs ih =>
    have hb : blockFits b := h b (by simp)
    have hbs : ∀ x ∈ bs, blockFits x := fun x hx => h x (by simp [hx])
    simp [readBlocksAux, readBlock_encBlock b _ hb, ih (b :: acc) hbs]

/-- A message reads back as itself. -/
theorem readMsg_encMsg (m : Message (List Token)) (rest : Bytes) (h : msgFits m) :
    readMsg (encMsg m ++ rest) = some (m, rest) := by
  cases m with
  | mk role blocks =>
    simp [encMsg, readMsg, roleOfByte_roleByte, readU32_u32le _ _ h.2,
      readBlocksAux_enc blocks [] rest h.1]

theorem readMsgsAux_enc (ms acc : List (Message (List Token))) (rest : Bytes)
    (h : ∀ m ∈ ms, msgFits m) :
    readMsgsAux ms.length acc (ms.flatMap encMsg ++ rest) = some (acc.reverse ++ ms, rest) := by
  induction ms generalizing acc with
  | nil => simp [readMsgsAux]
  | cons m ms ih =>
    have hm : msgFits m := h m (by simp)
    have hms : ∀ x ∈ ms, msgFits x := fun x hx => h x (by simp [hx])
    simp [readMsgsAux, readMsg_encMsg m _ hm, ih (m :: acc) hms]

/-- A conversation reads back as itself. -/
theorem readConv_encConv (c : Conversation (List Token)) (rest : Bytes) (h : convFits c) :
    readConv (encConv c ++ rest) = some (c, rest) := by
  cases c with
  | mk ms g =>
    cases g <;>
      simp [encConv, readConv, readU32_u32le _ _ h.2, readMsgsAux_enc ms [] rest h.1]

/-- **Render requests round-trip.** The request the Python side builds for a format and a
conversation (every id and count within `u32`) decodes, in the exported function, to exactly
that format and conversation: the native render renders what the caller sent. -/
theorem readRenderRequest_encRenderRequest (f : EncFormat) (c : Conversation (List Token))
    (hf : formatFits f) (hc : convFits c) :
    readRenderRequest (encRenderRequest f c) = .ok (f, c) := by
  have hconv : readConv (encConv c) = some (c, []) := by
    simpa using readConv_encConv c [] hc
  simp [encRenderRequest, readRenderRequest, readFormat_encFormat f _ hf, hconv]

/-- **Parse requests round-trip.** -/
theorem readParseRequest_encParseRequest (f : EncFormat) (ts : List Token)
    (hf : formatFits f) (ht : FitsToks ts) :
    readParseRequest (encParseRequest f ts) = .ok (f, ts) := by
  have htoks : readToks (encToks ts) = some (ts, []) := by
    simpa using readToks_encToks ts [] ht.1 ht.2
  simp [encParseRequest, readParseRequest, readFormat_encFormat f _ hf, htoks]

/-- **The native render is the proven render on the caller's data.** For any request the
Python side builds, the exported `renderBytes` answers with the encoding of
`Format.renderTok f c` (and of the `wf` / `valid` checks). -/
theorem renderBytes_encRenderRequest (f : EncFormat) (c : Conversation (List Token))
    (hf : formatFits f) (hc : convFits c) :
    renderBytes (toByteArray (encRenderRequest f c)) =
      toByteArray (encRenderAnswer f.wf (f.valid c) (f.renderTok c)) := by
  rw [renderBytes_eq]
  have h : (toByteArray (encRenderRequest f c)).data.toList = encRenderRequest f c := by
    simp [toByteArray]
  rw [h, readRenderRequest_encRenderRequest f c hf hc]

/-- **The native parse is the proven parse on the caller's tokens.** -/
theorem parseBytes_encParseRequest (f : EncFormat) (ts : List Token)
    (hf : formatFits f) (ht : FitsToks ts) :
    parseBytes (toByteArray (encParseRequest f ts)) =
      toByteArray (encParseAnswer f.wf (f.parse ts)) := by
  rw [parseBytes_eq]
  have h : (toByteArray (encParseRequest f ts)).data.toList = encParseRequest f ts := by
    simp [toByteArray]
  rw [h, readParseRequest_encParseRequest f ts hf ht]

end Ffi
end Verified

end
