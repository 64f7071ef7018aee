module

public import Verified.Thm.Ffi

public section

/-!
# The FFI wire: JSON values and requests with tool definitions

* `readJson_encJson`: a JSON value read back from its wire encoding is itself (fuel at least the
  encoding's length, by induction on the fuel; every text and count within `u32`, `jsonFits`).
* `readConv_encConv_tools`, `readLayoutRequest_encLayoutRequest_tools`: conversations and
  layout requests with tool definitions round-trip.
* `layoutBytes_encLayoutRequest_tools`: on any request with tools the Python side builds, the
  layout export answers with the encoding of `(lower c).map layout` on exactly the
  conversation sent.
-/

namespace Verified
namespace Ffi

/-! ## JSON values -/

mutual
/-- A JSON value fits the wire: every text and every count within `u32`. -/
@[expose] def jsonFits : Json → Bool
  | .num s => decide ((utf8 s).length < 4294967296)
  | .str s => decide ((utf8 s).length < 4294967296)
  | .arr xs => decide (xs.length < 4294967296) && jsonsFit xs
  | .obj kvs => decide (kvs.length < 4294967296) && membersFit kvs
  | _ => true

/-- The items of an array fit the wire. -/
@[expose] def jsonsFit : List Json → Bool
  | [] => true
  | x :: xs => jsonFits x && jsonsFit xs

/-- The members of an object fit the wire. -/
@[expose] def membersFit : List (Chars × Json) → Bool
  | [] => true
  | (k, v) :: kvs => decide ((utf8 k).length < 4294967296) && jsonFits v && membersFit kvs
end

/-- An object member on the wire. -/
@[expose] def encMember (kv : Chars × Json) : Bytes := encText kv.1 ++ encJson kv.2

theorem encJsons_eq (xs : List Json) : encJsons xs = xs.flatMap encJson := by
  induction xs with
  | nil => simp [encJsons]
  | cons x xs ih => simp [encJsons, ih]

theorem encMembers_eq (kvs : List (Chars × Json)) : encMembers kvs = kvs.flatMap encMember := by
  induction kvs with
  | nil => simp [encMembers]
  | cons kv kvs ih =>
    obtain ⟨k, v⟩ := kv
    simp [encMembers, encMember, ih]

theorem length_le_of_mem_flatMap {α : Type} (f : α → Bytes) {x : α} {xs : List α}
    (h : x ∈ xs) : (f x).length ≤ (xs.flatMap f).length := by
  induction xs with
  | nil => simp at h
  | cons y ys ih =>
    simp only [List.flatMap_cons, List.length_append]
    rcases List.mem_cons.mp h with rfl | h'
    · omega
    · have := ih h'
      omega

theorem jsonsFit_mem {xs : List Json} {x : Json} (h : jsonsFit xs = true) (hx : x ∈ xs) :
    jsonFits x = true := by
  induction xs with
  | nil => simp at hx
  | cons y ys ih =>
    simp only [jsonsFit, Bool.and_eq_true] at h
    rcases List.mem_cons.mp hx with rfl | h'
    · exact h.1
    · exact ih h.2 h'

theorem membersFit_mem {kvs : List (Chars × Json)} {kv : Chars × Json}
    (h : membersFit kvs = true) (hx : kv ∈ kvs) :
    (utf8 kv.1).length < 4294967296 ∧ jsonFits kv.2 = true := by
  induction kvs with
  | nil => simp at hx
  | cons y ys ih =>
    obtain ⟨k, v⟩ := y
    simp only [membersFit, Bool.and_eq_true, decide_eq_true_eq] at h
    rcases List.mem_cons.mp hx with rfl | h'
    · exact ⟨h.1.1, h.1.2⟩
    · exact ih h.2 h'

/-- **JSON values round-trip**, with any fuel at least the length of their encoding (the
request length, in `readLayoutRequest`). By induction on the fuel, so no nested induction on
`Json` is needed. -/
theorem readJson_encJson (fuel : Nat) : ∀ (j : Json) (rest : Bytes),
    (encJson j).length ≤ fuel → jsonFits j = true →
      readJson fuel (encJson j ++ rest) = some (j, rest) := by
  induction fuel with
  | zero =>
    intro j rest h _
    cases j with
    | bool b => cases b <;> simp [encJson] at h
    | _ => simp [encJson] at h
  | succ f ih =>
    intro j rest hlen hfit
    cases j with
    | null => simp [encJson, readJson]
    | bool b => cases b <;> simp [encJson, readJson]
    | num s =>
      simp only [jsonFits, decide_eq_true_eq] at hfit
      simp [encJson, readJson, readText_encText s rest hfit]
    | str s =>
      simp only [jsonFits, decide_eq_true_eq] at hfit
      simp [encJson, readJson, readText_encText s rest hfit]
    | arr xs =>
      simp only [jsonFits, Bool.and_eq_true, decide_eq_true_eq] at hfit
      have hl' : (encJson (.arr xs)).length = (xs.flatMap encJson).length + 5 := by
        simp only [encJson, encJsons_eq, u32le, List.length_cons, List.length_append,
          List.length_nil]
        (try omega)
      have hl := readList_encList (readJson f) encJson xs rest (fun x hx r => ih x r (by
          have h1 := length_le_of_mem_flatMap encJson hx
          omega) (jsonsFit_mem hfit.2 hx)) hfit.1
      simp only [encList, List.append_assoc] at hl
      simp only [encJson, encJsons_eq, List.cons_append, List.append_assoc]
      simp [readJson, hl]
    | obj kvs =>
      simp only [jsonFits, Bool.and_eq_true, decide_eq_true_eq] at hfit
      have hl' : (encJson (.obj kvs)).length = (kvs.flatMap encMember).length + 5 := by
        simp only [encJson, encMembers_eq, u32le, List.length_cons, List.length_append,
          List.length_nil]
        (try omega)
      have hm : ∀ kv ∈ kvs, ∀ r, readMemberWith (readJson f) (encMember kv ++ r) =
          some (kv, r) := by
        intro kv hkv r
        obtain ⟨hk, hv⟩ := membersFit_mem hfit.2 hkv
        have h1 := length_le_of_mem_flatMap encMember hkv
        have h2 : (encJson kv.2).length ≤ (encMember kv).length := by
          simp [encMember]
        have h3 := ih kv.2 r (by omega) hv
        obtain ⟨k, v⟩ := kv
        simp only [encMember, List.append_assoc, readMemberWith, readText_encText k _ hk]
        simp only at h3
        simp [h3]
      have hl := readList_encList (readMemberWith (readJson f)) encMember kvs rest hm hfit.1
      simp only [encList, List.append_assoc] at hl
      simp only [encJson, encMembers_eq, List.cons_append, List.append_assoc]
      simp [readJson, hl]

/-- **Conversations round-trip**, tool definitions included (fuel: at least the length of
every tool's encoding). -/
theorem readConv_encConv_tools (c : Conversation) (fuel : Nat) (rest : Bytes)
    (hj : ∀ ts, c.tools = some ts →
      ts.length < 4294967296 ∧ ∀ j ∈ ts, jsonFits j = true ∧ (encJson j).length ≤ fuel)
    (hm : ∀ m ∈ c.messages, FitsMsg m) (hl : c.messages.length < 4294967296) :
    readConv fuel (encConv c ++ rest) = some (c, rest) := by
  cases c with
  | mk ms tools g =>
    dsimp only at hj hm hl
    have hms := readList_encList readMsg encMsg ms rest (fun m hm' r => readMsg_encMsg m r
      (hm m hm')) hl
    have ho := readOpt_encOpt (readList (readJson fuel)) (encList encJson) tools
      (encList encMsg ms ++ rest) (fun ts hts r => readList_encList (readJson fuel) encJson ts r
        (fun j hjt r' => readJson_encJson fuel j r' ((hj ts hts).2 j hjt).2
          ((hj ts hts).2 j hjt).1) (hj ts hts).1)
    simp only [encConv, List.append_assoc, readConv, readBool_encBool, ho, hms]

/-- **Layout requests round-trip**, tool definitions included: the request the Python side
builds decodes, in the export, to exactly that format and conversation. -/
theorem readLayoutRequest_encLayoutRequest_tools (fam : Fam) (c : Conversation)
    (hf : FitsFam fam)
    (hj : ∀ ts, c.tools = some ts → ts.length < 4294967296 ∧ ∀ j ∈ ts, jsonFits j = true)
    (hm : ∀ m ∈ c.messages, FitsMsg m) (hl : c.messages.length < 4294967296) :
    readLayoutRequest (encLayoutRequest fam c) = .ok (fam, c) := by
  have hh := readHead_encFam fam (encConv c) hf
  have hlen : ∀ ts, c.tools = some ts → ∀ j ∈ ts,
      (encJson j).length ≤ (encLayoutRequest fam c).length := by
    intro ts hts j hjt
    have h1 := length_le_of_mem_flatMap encJson hjt
    cases c with
    | mk ms tools g =>
      dsimp only at hts
      subst hts
      simp only [encLayoutRequest, encConv, encOpt, encList, List.length_cons,
        List.length_append]
      omega
  have hc := readConv_encConv_tools c (encLayoutRequest fam c).length []
    (fun ts hts => ⟨(hj ts hts).1, fun j hjt => ⟨(hj ts hts).2 j hjt, hlen ts hts j hjt⟩⟩) hm hl
  simp only [List.append_nil] at hc
  have e : encLayoutRequest fam c = wireVersion :: (encFam fam ++ encConv c) := rfl
  rw [e] at hc
  unfold readLayoutRequest
  rw [e, hh]
  simp only [hc]

/-- **The native layout is the proven lowering and layout on the caller's conversation**, tool
definitions included: on any request the Python side builds, `lvt_layout_bytes` answers with
the encoding of `(Format.lower c).map Format.layout`. -/
theorem layoutBytes_encLayoutRequest_tools (fam : Fam) (c : Conversation) (hf : FitsFam fam)
    (hj : ∀ ts, c.tools = some ts → ts.length < 4294967296 ∧ ∀ j ∈ ts, jsonFits j = true)
    (hm : ∀ m ∈ c.messages, FitsMsg m) (hl : c.messages.length < 4294967296) :
    layoutBytes (toByteArray (encLayoutRequest fam c)) =
      toByteArray (encLayoutAnswer (layoutOf fam c)) := by
  rw [layoutBytes_eq_service]
  have h : (toByteArray (encLayoutRequest fam c)).data.toList = encLayoutRequest fam c := by
    simp [toByteArray]
  rw [h]
  simp [layoutService, readLayoutRequest_encLayoutRequest_tools fam c hf hj hm hl]

end Ffi
end Verified

end
