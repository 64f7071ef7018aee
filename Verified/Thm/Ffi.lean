module

public import Verified.Ffi
public import Verified.Thm.Token

public section

/-!
# The FFI: what runs is what was proven, and the wire round trips

* `layoutBytes_eq`, `unlayoutBytes_eq` (by `rfl`): each export is "decode the request, run the
  spec function (`Format.lower` then `Format.layout`; `Format.unlayout`), encode the answer".
* `render_eq_layoutOf`, `parse_eq`: the render and the parse of `Spec/Format.lean` are the
  exports' spec functions with the codec steps the Python side runs around them
  (`encodeItems`, `decodeSyms`).
* Wire round trips (every id, count and byte length below `2 ^ 32`, which the Python encoder
  checks before sending): integers, Booleans, options, lists (`readList_encList`, generic),
  token lists, text (`readText_encText`, through `utf8Decode_utf8`), payloads, blocks,
  messages, conversations, the format parameters of both families, symbol streams, whole
  requests (`readLayoutRequest_encLayoutRequest`, `readUnlayoutRequest_encUnlayoutRequest`;
  with tool definitions, JSON values, in `Thm/FfiJson.lean`) and layout answers
  (`readLayoutAnswer_encLayoutAnswer`): the items Python reads are the items Lean laid out.
* `layoutBytes_encLayoutRequest`, `unlayoutBytes_encUnlayoutRequest`: on any request the
  Python side builds, the export answers with the encoding of `(lower c).map layout` /
  `unlayout s` on exactly the conversation / symbols sent; `render_of_layoutAnswer`: the items
  read from the answer, encoded span by span, are `Format.render`.

Not proven here: that the Python decoders of the answers (`pybind/lvt/runtime/wire.py`) mirror
the Lean encoders (`readLayoutAnswer` is their Lean statement for layout answers; the unlayout
answer has no Lean reader); the tests (`tests/native/`) round-trip them on hypothesis data and
the kernel compares the bytes on concrete requests.
-/

namespace Verified
namespace Ffi

/-! ## The exports are the spec functions between decoder and encoder -/

/-- The exported layout is, by definition, the proven `Format.lower` and `Format.layout`
between the wire decoder and encoder. -/
theorem layoutBytes_eq (req : ByteArray) :
    layoutBytes req =
      match readLayoutRequest req.data.toList with
      | .ok (fam, c) => toByteArray (encLayoutAnswer ((fam.format.lower c).map fam.format.layout))
      | .error e => toByteArray (encError e) := rfl

/-- The exported unlayout is, by definition, the proven `Format.unlayout` between the wire
decoder and encoder. -/
theorem unlayoutBytes_eq (req : ByteArray) :
    unlayoutBytes req =
      match readUnlayoutRequest req.data.toList with
      | .ok (.qwen f, s) => toByteArray (0 :: encOpt encQConv ((Fam.qwen f).format.unlayout s))
      | .ok (.llama f, s) =>
          toByteArray (0 :: encOpt encLConv ((Fam.llama f).format.unlayout s))
      | .error e => toByteArray (encError e) := by
  unfold unlayoutBytes
  rcases readUnlayoutRequest req.data.toList with e | ⟨fam, s⟩
  · rfl
  · cases fam <;> rfl

/-- The export is the list-level layout service (what the kernel-checked tests evaluate). -/
theorem layoutBytes_eq_service (req : ByteArray) :
    layoutBytes req = toByteArray (layoutService req.data.toList) := by
  unfold layoutBytes layoutService
  cases readLayoutRequest req.data.toList <;> rfl

/-- The export is the list-level unlayout service. -/
theorem unlayoutBytes_eq_service (req : ByteArray) :
    unlayoutBytes req = toByteArray (unlayoutService req.data.toList) := by
  unfold unlayoutBytes unlayoutService
  cases readUnlayoutRequest req.data.toList <;> rfl

/-- The render of `Spec/Format.lean` is the layout the export answers, encoded span by span
with the codec (what `core.encode_items` does on the Python side). -/
theorem render_eq_layoutOf (fam : Fam) (codec : Codec) (c : Conversation) :
    fam.format.render codec c = (layoutOf fam c).map (encodeItems codec) := by
  unfold Format.render layoutOf
  cases fam.format.lower c <;> rfl

/-- The parse of `Spec/Format.lean` is the export's `unlayout` after `decodeSyms` (what
`core.decode_syms` does on the Python side). -/
theorem parse_eq (fam : Fam) (codec : Codec) (ts : List Token) :
    fam.format.parse codec ts =
      (decodeSyms codec fam.format.reserved ts).bind fam.format.unlayout := rfl

/-! ## Integers, Booleans, options, lists -/

/-- A byte's value is the number modulo 256. -/
theorem toNat_toUInt8_eq (n : Nat) : n.toUInt8.toNat = n % 256 := rfl

/-- A `u32` reads back as itself. -/
theorem readU32_u32le (n : Nat) (rest : Bytes) (h : n < 4294967296) :
    readU32 (u32le n ++ rest) = some (n, rest) := by
  have key : n.toUInt8.toNat + 256 * ((n / 256).toUInt8.toNat + 256 * ((n / 65536).toUInt8.toNat +
      256 * (n / 16777216).toUInt8.toNat)) = n := by
    simp only [toNat_toUInt8_eq]
    omega
  simp only [u32le, List.cons_append, List.nil_append, readU32, key]

/-- A Boolean reads back as itself. -/
theorem readBool_encBool (b : Bool) (rest : Bytes) :
    readBool (encBool b ++ rest) = some (b, rest) := by
  cases b <;> simp [encBool, readBool]

/-- Reading the elements of an encoded list appends them to the accumulator. -/
theorem readManyAux_enc {α : Type} (rd : Bytes → Option (α × Bytes)) (enc : α → Bytes)
    (xs acc : List α) (rest : Bytes) (h : ∀ x ∈ xs, ∀ r, rd (enc x ++ r) = some (x, r)) :
    readManyAux rd xs.length acc (xs.flatMap enc ++ rest) = some (acc.reverse ++ xs, rest) := by
  induction xs generalizing acc with
  | nil => simp [readManyAux]
  | cons x xs ih =>
    have hx : rd (enc x ++ (xs.flatMap enc ++ rest)) = some (x, xs.flatMap enc ++ rest) :=
      h x (by simp) _
    have hxs : ∀ y ∈ xs, ∀ r, rd (enc y ++ r) = some (y, r) := fun y hy => h y (by simp [hy])
    simp [readManyAux, hx, ih (x :: acc) hxs]

/-- **Lists round-trip**, for any element codec that does. -/
theorem readList_encList {α : Type} (rd : Bytes → Option (α × Bytes)) (enc : α → Bytes)
    (xs : List α) (rest : Bytes) (h : ∀ x ∈ xs, ∀ r, rd (enc x ++ r) = some (x, r))
    (hl : xs.length < 4294967296) :
    readList rd (encList enc xs ++ rest) = some (xs, rest) := by
  have hm := readManyAux_enc rd enc xs [] rest h
  simp only [List.reverse_nil, List.nil_append] at hm
  simp only [encList, List.append_assoc, readList, readU32_u32le _ _ hl, hm]

/-- **Options round-trip.** -/
theorem readOpt_encOpt {α : Type} (rd : Bytes → Option (α × Bytes)) (enc : α → Bytes)
    (x : Option α) (rest : Bytes) (h : ∀ a, x = some a → ∀ r, rd (enc a ++ r) = some (a, r)) :
    readOpt rd (encOpt enc x ++ rest) = some (x, rest) := by
  cases x with
  | none => simp [encOpt, readOpt]
  | some a => simp [encOpt, readOpt, h a rfl rest]

/-- Every id of the list fits in a `u32`. -/
abbrev Fits (ts : List Token) : Prop := ∀ t ∈ ts, t < 4294967296

/-- A token list fits the wire: its ids and its length. -/
abbrev FitsToks (ts : List Token) : Prop := Fits ts ∧ ts.length < 4294967296

/-- **Token lists round-trip.** -/
theorem readToks_encToks (ts : List Token) (rest : Bytes) (h : FitsToks ts) :
    readToks (encToks ts ++ rest) = some (ts, rest) :=
  readList_encList readU32 u32le ts rest (fun t ht r => readU32_u32le t r (h.1 t ht)) h.2

/-- Text fits the wire: its UTF-8 byte count fits in a `u32`. -/
abbrev FitsText (cs : Chars) : Prop := (utf8 cs).length < 4294967296

/-- **Text round-trips**, through the UTF-8 decoder of the spec (`utf8Decode_utf8`). -/
theorem readText_encText (cs : Chars) (rest : Bytes) (h : FitsText cs) :
    readText (encText cs ++ rest) = some (cs, rest) := by
  have h1 : (utf8 cs ++ rest).take (utf8 cs).length = utf8 cs := by simp
  have h2 : (utf8 cs ++ rest).drop (utf8 cs).length = rest := by simp
  have h3 : (utf8 cs).length ≤ (utf8 cs ++ rest).length := by simp
  simp only [encText, List.append_assoc, readText, readU32_u32le _ _ h, h1, h2, h3,
    if_true, utf8Decode_utf8]

/-- A pair of ids round-trips. -/
theorem readPair_encPair (p : Token × Token) (rest : Bytes)
    (h : p.1 < 4294967296 ∧ p.2 < 4294967296) :
    readPair (encPair p ++ rest) = some (p, rest) := by
  simp [encPair, readPair, readU32_u32le _ _ h.1, readU32_u32le _ _ h.2]

/-! ## Conversations without JSON: payloads, blocks, messages -/

/-- A payload fits the wire. -/
@[expose] def FitsPayload : Payload → Prop
  | .text s => FitsText s
  | .tokens ts => FitsToks ts

/-- **Payloads round-trip.** -/
theorem readPayload_encPayload (p : Payload) (rest : Bytes) (h : FitsPayload p) :
    readPayload (encPayload p ++ rest) = some (p, rest) := by
  cases p with
  | text s => simp [encPayload, readPayload, readText_encText s rest h]
  | tokens ts => simp [encPayload, readPayload, readToks_encToks ts rest h]

/-- A block fits the wire. -/
@[expose] def FitsBlock : Block → Prop
  | .plain p => FitsPayload p
  | .reasoning p => FitsPayload p
  | .toolCall n a i => FitsText n ∧ FitsText a ∧ ∀ s, i = some s → FitsText s
  | .sampled ts => FitsToks ts

/-- **Blocks round-trip.** -/
theorem readBlock_encBlock (b : Block) (rest : Bytes) (h : FitsBlock b) :
    readBlock (encBlock b ++ rest) = some (b, rest) := by
  cases b with
  | plain p => simp [encBlock, readBlock, readPayload_encPayload p rest h]
  | reasoning p => simp [encBlock, readBlock, readPayload_encPayload p rest h]
  | toolCall n a i =>
    have hi := readOpt_encOpt readText encText i rest
      (fun s hs r => readText_encText s r (h.2.2 s hs))
    simp [encBlock, readBlock, readText_encText n _ h.1, readText_encText a _ h.2.1, hi]
  | sampled ts => simp [encBlock, readBlock, readToks_encToks ts rest h]

/-- The role of a role byte. -/
theorem roleOfByte_roleByte (r : Role) : roleOfByte (roleByte r) = some r := by
  cases r <;> rfl

/-- A message fits the wire. -/
@[expose] def FitsMsg (m : Message) : Prop :=
  (∀ b ∈ m.blocks, FitsBlock b) ∧ m.blocks.length < 4294967296

/-- **Messages round-trip.** -/
theorem readMsg_encMsg (m : Message) (rest : Bytes) (h : FitsMsg m) :
    readMsg (encMsg m ++ rest) = some (m, rest) := by
  cases m with
  | mk role blocks =>
    have hb := readList_encList readBlock encBlock blocks rest
      (fun b hb r => readBlock_encBlock b r (h.1 b hb)) h.2
    simp [encMsg, readMsg, roleOfByte_roleByte, hb]

/-- **Conversations without tool definitions round-trip** (with any fuel: the JSON reader is
not reached). -/
theorem readConv_encConv (c : Conversation) (fuel : Nat) (rest : Bytes) (ht : c.tools = none)
    (hm : ∀ m ∈ c.messages, FitsMsg m) (hl : c.messages.length < 4294967296) :
    readConv fuel (encConv c ++ rest) = some (c, rest) := by
  cases c with
  | mk ms tools g =>
    dsimp only at ht hm hl
    subst ht
    have hms := readList_encList readMsg encMsg ms rest (fun m hm' r => readMsg_encMsg m r
      (hm m hm')) hl
    simp [encConv, readConv, readBool_encBool, encOpt, readOpt, hms]

/-! ## Format parameters -/

/-- The mode of a mode byte. -/
theorem modeOfByte_modeByte (m : Qwen.Mode) : modeOfByte (modeByte m) = some m := by
  cases m <;> rfl

/-- A pair of ids fits the wire. -/
abbrev FitsPair (p : Token × Token) : Prop := p.1 < 4294967296 ∧ p.2 < 4294967296

/-- The ids of a Qwen format fit the wire. -/
@[expose] def FitsQwen (f : Qwen.QwenFmt) : Prop :=
  f.ids.imStart < 4294967296 ∧ f.ids.imEnd < 4294967296 ∧ f.ids.callOpen < 4294967296 ∧
    f.ids.callClose < 4294967296 ∧ (∀ p, f.ids.toolResponse = some p → FitsPair p) ∧
    (∀ p, f.ids.think = some p → FitsPair p) ∧ FitsToks f.ids.extra ∧
    ∀ s, f.defaultSystem = some s → FitsText s

/-- **Qwen format parameters round-trip.** -/
theorem readQwenFmt_encQwenFmt (f : Qwen.QwenFmt) (rest : Bytes) (h : FitsQwen f) :
    readQwenFmt (encQwenFmt f ++ rest) = some (f, rest) := by
  obtain ⟨⟨s, e, co, cc, tr, th, ex⟩, mode, et, ds, pt⟩ := f
  obtain ⟨h1, h2, h3, h4, h5, h6, h7, h8⟩ := h
  have htr := fun r => readOpt_encOpt readPair encPair tr r
    (fun p hp r' => readPair_encPair p r' (h5 p hp))
  have hth := fun r => readOpt_encOpt readPair encPair th r
    (fun p hp r' => readPair_encPair p r' (h6 p hp))
  have hds := fun r => readOpt_encOpt readText encText ds r
    (fun t ht r' => readText_encText t r' (h8 t ht))
  simp [encQwenFmt, readQwenFmt, readU32_u32le _ _ h1, readU32_u32le _ _ h2,
    readU32_u32le _ _ h3, readU32_u32le _ _ h4, htr, hth, readToks_encToks _ _ h7,
    modeOfByte_modeByte, readBool_encBool, hds]

/-- The ids and the date of a Llama format fit the wire. -/
@[expose] def FitsLlama (f : Llama.LlamaFmt) : Prop :=
  f.ids.bos < 4294967296 ∧ f.ids.startHeader < 4294967296 ∧ f.ids.endHeader < 4294967296 ∧
    f.ids.eot < 4294967296 ∧ FitsToks f.ids.extra ∧ FitsText f.date

/-- **Llama format parameters round-trip.** -/
theorem readLlamaFmt_encLlamaFmt (f : Llama.LlamaFmt) (rest : Bytes) (h : FitsLlama f) :
    readLlamaFmt (encLlamaFmt f ++ rest) = some (f, rest) := by
  obtain ⟨⟨b, sh, eh, eot, ex⟩, date, tu⟩ := f
  obtain ⟨h1, h2, h3, h4, h5, h6⟩ := h
  simp [encLlamaFmt, readLlamaFmt, readU32_u32le _ _ h1, readU32_u32le _ _ h2,
    readU32_u32le _ _ h3, readU32_u32le _ _ h4, readToks_encToks _ _ h5,
    readText_encText _ _ h6, readBool_encBool]

/-- A format fits the wire. -/
@[expose] def FitsFam : Fam → Prop
  | .qwen f => FitsQwen f
  | .llama f => FitsLlama f

/-- **The head of a request round-trips**: version byte, family, parameters. -/
theorem readHead_encFam (fam : Fam) (rest : Bytes) (h : FitsFam fam) :
    readHead (wireVersion :: (encFam fam ++ rest)) = .ok (fam, rest) := by
  cases fam with
  | qwen f => simp [encFam, readHead, readQwenFmt_encQwenFmt f rest h]
  | llama f => simp [encFam, readHead, readLlamaFmt_encLlamaFmt f rest h]

/-! ## Symbol streams and unlayout requests -/

/-- A symbol fits the wire. -/
@[expose] def FitsSym : Sym → Prop
  | .ctrl t => t < 4294967296
  | .ch _ => True
  | .tok t => t < 4294967296

/-- One character's UTF-8 encoding has at most four bytes. -/
theorem utf8_single_length (c : Char) : (utf8 [c]).length < 4294967296 := by
  simp only [utf8, List.flatMap_cons, List.flatMap_nil, List.append_nil, String.utf8EncodeChar]
  split
  · simp
  · split
    · simp
    · split <;> simp

/-- A symbol entry reads back as that symbol. -/
theorem readSymEntry_encSym (x : Sym) (rest : Bytes) (h : FitsSym x) :
    readSymEntry (encSym x ++ rest) = some ([x], rest) := by
  cases x with
  | ctrl t => simp [encSym, readSymEntry, readU32_u32le t rest h]
  | ch c => simp [encSym, readSymEntry, readText_encText [c] rest (utf8_single_length c), lit]
  | tok t => simp [encSym, readSymEntry, readU32_u32le t rest h]

/-- A list of singletons flattens back to the list. -/
theorem flatten_map_singleton {α : Type} (s : List α) : (s.map (fun x => [x])).flatten = s := by
  induction s with
  | nil => rfl
  | cons x xs ih => simp [ih]

/-- **Symbol streams round-trip.** -/
theorem readSyms_encSyms (s : List Sym) (rest : Bytes) (h : ∀ x ∈ s, FitsSym x)
    (hl : s.length < 4294967296) :
    readSyms (encSyms s ++ rest) = some (s, rest) := by
  have hm : readManyAux readSymEntry s.length [] (s.flatMap encSym ++ rest) =
      some (s.map (fun x => [x]), rest) := by
    have key : ∀ (xs : List Sym) (acc : List (List Sym)), (∀ x ∈ xs, FitsSym x) →
        readManyAux readSymEntry xs.length acc (xs.flatMap encSym ++ rest) =
          some (acc.reverse ++ xs.map (fun x => [x]), rest) := by
      intro xs
      induction xs with
      | nil => intro acc _; simp [readManyAux]
      | cons x xs ih =>
        intro acc hx
        have h1 := readSymEntry_encSym x (xs.flatMap encSym ++ rest) (hx x (by simp))
        have h2 := ih ([x] :: acc) (fun y hy => hx y (by simp [hy]))
        simp [readManyAux, h1, h2]
    simpa using key s [] h
  have hflat : (s.map (fun x => [x])).flatten = s := flatten_map_singleton s
  simp only [encSyms, encList, List.append_assoc, readSyms, readList, readU32_u32le _ _ hl, hm,
    hflat]

/-- **Unlayout requests round-trip.** -/
theorem readUnlayoutRequest_encUnlayoutRequest (fam : Fam) (s : List Sym) (hf : FitsFam fam)
    (hs : ∀ x ∈ s, FitsSym x) (hl : s.length < 4294967296) :
    readUnlayoutRequest (encUnlayoutRequest fam s) = .ok (fam, s) := by
  have hh := readHead_encFam fam (encSyms s) hf
  have hy : readSyms (encSyms s) = some (s, []) := by
    simpa using readSyms_encSyms s [] hs hl
  simp [readUnlayoutRequest, encUnlayoutRequest, hh, hy]

/-- **The native unlayout is the proven unlayout on the caller's symbols.** -/
theorem unlayoutBytes_encUnlayoutRequest (fam : Fam) (s : List Sym) (hf : FitsFam fam)
    (hs : ∀ x ∈ s, FitsSym x) (hl : s.length < 4294967296) :
    unlayoutBytes (toByteArray (encUnlayoutRequest fam s)) = toByteArray (unlayoutAnswer fam s) := by
  rw [unlayoutBytes_eq_service]
  have h : (toByteArray (encUnlayoutRequest fam s)).data.toList = encUnlayoutRequest fam s := by
    simp [toByteArray]
  rw [h]
  simp [unlayoutService, readUnlayoutRequest_encUnlayoutRequest fam s hf hs hl]

/-- **Layout requests round-trip** (conversations without tool definitions; with tools, the
kernel-checked tests compare the bytes). -/
theorem readLayoutRequest_encLayoutRequest (fam : Fam) (c : Conversation) (hf : FitsFam fam)
    (ht : c.tools = none) (hm : ∀ m ∈ c.messages, FitsMsg m)
    (hl : c.messages.length < 4294967296) :
    readLayoutRequest (encLayoutRequest fam c) = .ok (fam, c) := by
  have hh := readHead_encFam fam (encConv c) hf
  have hc : ∀ fuel, readConv fuel (encConv c) = some (c, []) := fun fuel => by
    simpa using readConv_encConv c fuel [] ht hm hl
  simp [readLayoutRequest, encLayoutRequest, hh, hc]

/-- **The native layout is the proven lowering and layout on the caller's conversation**
(without tool definitions). -/
theorem layoutBytes_encLayoutRequest (fam : Fam) (c : Conversation) (hf : FitsFam fam)
    (ht : c.tools = none) (hm : ∀ m ∈ c.messages, FitsMsg m)
    (hl : c.messages.length < 4294967296) :
    layoutBytes (toByteArray (encLayoutRequest fam c)) =
      toByteArray (encLayoutAnswer (layoutOf fam c)) := by
  rw [layoutBytes_eq_service]
  have h : (toByteArray (encLayoutRequest fam c)).data.toList = encLayoutRequest fam c := by
    simp [toByteArray]
  rw [h]
  simp [layoutService, readLayoutRequest_encLayoutRequest fam c hf ht hm hl]

/-! ## Layout answers -/

/-- A piece fits the wire. -/
@[expose] def FitsPiece : Piece → Prop
  | .ctrl t => t < 4294967296
  | .text cs => FitsText cs
  | .toks ts => FitsToks ts

/-- An item fits the wire. -/
@[expose] def FitsItem (i : Item) : Prop := FitsPiece i.piece ∧ i.ann.owner < 4294967296

/-- A piece reads back as itself. -/
theorem readPiece_encPiece (p : Piece) (rest : Bytes) (h : FitsPiece p) :
    readPiece (encPiece p ++ rest) = some (p, rest) := by
  cases p with
  | ctrl t => simp [encPiece, readPiece, readU32_u32le t rest h]
  | text cs => simp [encPiece, readPiece, readText_encText cs rest h]
  | toks ts => simp [encPiece, readPiece, readToks_encToks ts rest h]

/-- **Items round-trip.** -/
theorem readItem_encItem (i : Item) (rest : Bytes) (h : FitsItem i) :
    readItem (encItem i ++ rest) = some (i, rest) := by
  obtain ⟨p, ⟨o, l⟩⟩ := i
  simp [encItem, readItem, readPiece_encPiece p _ h.1, readU32_u32le o _ h.2, readBool_encBool]

/-- **Layout answers round-trip**: the items the Python side reads from the answer are the
items Lean laid out (every id, owner, count and byte length within `u32`). -/
theorem readLayoutAnswer_encLayoutAnswer (x : Option (List Item))
    (h : ∀ is, x = some is → (∀ i ∈ is, FitsItem i) ∧ is.length < 4294967296) :
    readLayoutAnswer (encLayoutAnswer x) = some x := by
  cases x with
  | none => simp [encLayoutAnswer, readLayoutAnswer]
  | some is =>
    obtain ⟨hi, hl⟩ := h is rfl
    have hr : readList readItem (encList encItem is) = some (is, []) := by
      simpa using readList_encList readItem encItem is [] (fun i hi' r => readItem_encItem i r
        (hi i hi')) hl
    simp [encLayoutAnswer, readLayoutAnswer, hr]

/-- **The render from the native layout is the proven render**: decoding the layout answer and
encoding its spans with any codec gives `Format.render`. -/
theorem render_of_layoutAnswer (fam : Fam) (codec : Codec) (c : Conversation)
    (h : ∀ is, layoutOf fam c = some is → (∀ i ∈ is, FitsItem i) ∧ is.length < 4294967296) :
    (readLayoutAnswer (encLayoutAnswer (layoutOf fam c))).map (·.map (encodeItems codec)) =
      some (fam.format.render codec c) := by
  rw [readLayoutAnswer_encLayoutAnswer _ h, render_eq_layoutOf]
  rfl

end Ffi
end Verified

end
