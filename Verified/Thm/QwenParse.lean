module

public import Verified.Thm.QwenLayout
public import Verified.Thm.SymSplit

public section

/-!
# Reading Qwen layouts back: facts and pieces

The distinctness facts of well-formed ids (`WfFacts`, `wfFacts`), the role prefixes the reader
tells apart, and content with tool calls read back (`contentCalls_read`).
-/

namespace Verified.Qwen

open Verified

/-- `'assistant\n'`, `'system\n'`, `'user'`: the role prefixes the reader tells apart. -/
local notation "tAsst" => ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't', '\n']
local notation "tSystem" => ['s', 'y', 's', 't', 'e', 'm', '\n']
local notation "tUser" => ['u', 's', 'e', 'r']

/-! ## Reading a layout back -/

section Read

variable (f : QwenFmt)

/-- The distinctness facts of the control ids that reading a layout back needs. -/
structure WfFacts (i : QwenIds) : Prop where
  se : i.imStart ≠ i.imEnd
  so : i.imStart ≠ i.callOpen
  sc : i.imStart ≠ i.callClose
  eo : i.imEnd ≠ i.callOpen
  oc : i.callOpen ≠ i.callClose
  resp : ∀ a b, i.toolResponse = some (a, b) →
    i.imStart ≠ a ∧ i.imStart ≠ b ∧ i.imEnd ≠ a ∧ b ≠ a
  think : ∀ a b, i.think = some (a, b) →
    i.imStart ≠ a ∧ i.imStart ≠ b ∧ i.imEnd ≠ a ∧ i.imEnd ≠ b ∧ i.callOpen ≠ a

theorem tok_ne {a b : Token} (h : @Ne Nat a b) : a ≠ b := h

theorem nodup_of_nodupB : ∀ {l : List Nat}, nodupB l = true → l.Nodup
  | [], _ => List.nodup_nil
  | x :: xs, h => by
    unfold nodupB at h
    cases he : xs.elem x
    · rw [he] at h
      refine List.nodup_cons.mpr ⟨fun hx => ?_, nodup_of_nodupB h⟩
      have := List.elem_eq_true_of_mem hx
      rw [he] at this
      cases this
    · rw [he] at h
      cases h

/-- `QwenIds.wf` gives the distinctness facts. -/
theorem wfFacts {i : QwenIds} (hf : i.wf = true) : WfFacts i := by
  unfold QwenIds.wf at hf
  have hn := nodup_of_nodupB hf
  rcases hr : i.toolResponse with _ | ⟨a, b⟩ <;> rcases ht : i.think with _ | ⟨a', b'⟩ <;>
    rw [hr, ht] at hn <;>
    exact ⟨tok_ne (fun h => by simp [h] at hn), tok_ne (fun h => by simp [h] at hn),
      tok_ne (fun h => by simp [h] at hn), tok_ne (fun h => by simp [h] at hn),
      tok_ne (fun h => by simp [h] at hn),
      fun _ _ h => by
        rw [hr] at h
        cases h <;> exact ⟨tok_ne (fun h => by simp [h] at hn),
          tok_ne (fun h => by simp [h] at hn), tok_ne (fun h => by simp [h] at hn),
          tok_ne (fun h => by simp [h] at hn)⟩,
      fun _ _ h => by
        rw [ht] at h
        cases h <;> exact ⟨tok_ne (fun h => by simp [h] at hn),
          tok_ne (fun h => by simp [h] at hn), tok_ne (fun h => by simp [h] at hn),
          tok_ne (fun h => by simp [h] at hn), tok_ne (fun h => by simp [h] at hn)⟩⟩

/-! ### Text helpers -/

theorem asst_lit : tAsst = 'a' :: ['s', 's', 'i', 's', 't', 'a', 'n', 't', '\n'] := by decide
theorem sys_lit : tSystem = 's' :: ['y', 's', 't', 'e', 'm', '\n'] := by decide
theorem user_lit : tUser = 'u' :: ['s', 'e', 'r'] := by decide
theorem sys_name : ['s', 'y', 's', 't', 'e', 'm'] ++ ['\n'] = tSystem := by decide
theorem respSep_eq : respCloseText ++ ['\n'] ++ respOpenText = respSepText := by decide
theorem respSep_ne : respSepText ≠ [] := by decide

theorem stripPrefix?_cons_ne {α : Type} [DecidableEq α] {a b : α} (p l : List α) (h : a ≠ b) :
    stripPrefix? (a :: p) (b :: l) = none := by
  simp [stripPrefix?, h]

theorem asst_user (p : Chars) : stripPrefix? tAsst (tUser ++ p) = none := by
  rw [asst_lit, user_lit]
  exact stripPrefix?_cons_ne _ _ (by decide)

theorem sys_user (p : Chars) : stripPrefix? tSystem (tUser ++ p) = none := by
  rw [sys_lit, user_lit]
  exact stripPrefix?_cons_ne _ _ (by decide)

theorem asst_sys (p : Chars) : stripPrefix? tAsst (tSystem ++ p) = none := by
  rw [asst_lit, sys_lit]
  exact stripPrefix?_cons_ne _ _ (by decide)

theorem takeText_lit_of (cs : Chars) (s : List Sym) (hs : takeText s = ([], s)) :
    takeText (lit cs ++ s) = (cs, s) := by
  rw [takeText_lit_append, hs, List.append_nil]

theorem ctrl_not_mem_lit (t : Token) (cs : Chars) : .ctrl t ∉ lit cs := by
  simp [lit]

theorem unlayoutTurn_asst {pre x : Chars} {rest : List Sym} (hr : takeText rest = ([], rest))
    (h : stripPrefix? tAsst pre = some x) :
    unlayoutTurn f (lit pre ++ rest) = unlayoutAssistant f x rest := by
  unfold unlayoutTurn
  simp only [takeText_lit_of _ _ hr, h]

theorem unlayoutTurn_sys {pre x : Chars} {rest : List Sym} (hr : takeText rest = ([], rest))
    (h1 : stripPrefix? tAsst pre = none)
    (h : stripPrefix? tSystem pre = some x) :
    unlayoutTurn f (lit pre ++ rest) = unlayoutSystem f x rest := by
  unfold unlayoutTurn
  simp only [takeText_lit_of _ _ hr, h1, h]

theorem unlayoutTurn_user {pre x : Chars} {rest : List Sym} (hr : takeText rest = ([], rest))
    (h1 : stripPrefix? tAsst pre = none)
    (h2 : stripPrefix? tSystem pre = none)
    (h : stripPrefix? tUser pre = some x) :
    unlayoutTurn f (lit pre ++ rest) = unlayoutUser f x rest := by
  unfold unlayoutTurn
  simp only [takeText_lit_of _ _ hr, h1, h2, h]

/-- Splitting at a control token that only the separators carry. -/
theorem splitAtCtrl_flatMap (t : Token) : ∀ (bs : List (List Sym)) (a : List Sym),
    .ctrl t ∉ a → (∀ b ∈ bs, .ctrl t ∉ b) →
    splitAtCtrl t (a ++ bs.flatMap (.ctrl t :: ·)) = (a, bs)
  | [], a, ha, _ => by
    rw [List.flatMap_nil, List.append_nil]
    exact splitAtCtrl_of_not_mem t a ha
  | b :: bs, a, ha, hb => by
    simp only [List.flatMap_cons, List.cons_append, splitAtCtrl_append_ctrl t a _ ha,
      splitAtCtrl_flatMap t bs b (hb b List.mem_cons_self)
        (fun b' h => hb b' (List.mem_cons_of_mem _ h))]

theorem mem_piecesOf {α : Type} {g : α → List Sym} {between final : List Sym} :
    ∀ {as : List α} {p : List Sym}, p ∈ piecesOf g between final as →
      ∃ a ∈ as, p = g a ++ between ∨ p = g a ++ final
  | [], p, h => by cases h
  | [a], p, h => by
    simp only [piecesOf, List.mem_singleton] at h
    exact ⟨a, List.mem_singleton_self a, Or.inr h⟩
  | a :: b :: as, p, h => by
    rw [piecesOf_cons_of_ne_nil g between final a (b :: as) (List.cons_ne_nil b as)] at h
    rcases List.mem_cons.mp h with rfl | h
    · exact ⟨a, List.mem_cons_self, Or.inl rfl⟩
    · obtain ⟨c, hc, e⟩ := mem_piecesOf h
      exact ⟨c, List.mem_cons_of_mem _ hc, e⟩

theorem final_mem_piecesOf {α : Type} {g : α → List Sym} {between final : List Sym} (c : Sym)
    {x : Sym} (hx : x ∈ final) :
    ∀ {as : List α}, as ≠ [] → x ∈ (piecesOf g between final as).flatMap (c :: ·)
  | [], h => absurd rfl h
  | [a], _ => by simp [piecesOf, hx]
  | a :: b :: as, _ => by
    rw [piecesOf_cons_of_ne_nil g between final a (b :: as) (List.cons_ne_nil b as),
      List.flatMap_cons]
    exact List.mem_append_right _ (final_mem_piecesOf c hx (List.cons_ne_nil b as))

/-- Pieces joined by a symbol start with it. -/
theorem flatMap_piecesOf_cons {α : Type} (c : Sym) (g : α → List Sym) (between final : List Sym) :
    ∀ {as : List α}, as ≠ [] → ∃ r, (piecesOf g between final as).flatMap (c :: ·) = c :: r
  | [], h => absurd rfl h
  | [a], _ => ⟨_, rfl⟩
  | a :: b :: as, _ => by
    rw [piecesOf_cons_of_ne_nil g between final a (b :: as) (List.cons_ne_nil b as)]
    exact ⟨_, rfl⟩

/-- A control token that no piece carries is not in the pieces joined by another one. -/
theorem not_mem_piecesOf {α : Type} {g : α → List Sym} {between final : List Sym} {c x : Sym}
    (hc : c ≠ x) (hg : ∀ a, x ∉ g a) (hb : x ∉ between) (hf : x ∉ final) (as : List α) :
    x ∉ (piecesOf g between final as).flatMap (c :: ·) := by
  intro h
  obtain ⟨p, hp, hx⟩ := List.mem_flatMap.mp h
  obtain ⟨a, -, e | e⟩ := mem_piecesOf hp <;> subst e
  · rcases List.mem_cons.mp hx with hx | hx
    · exact hc hx.symm
    · rcases List.mem_append.mp hx with hx | hx
      · exact hg a hx
      · exact hb hx
  · rcases List.mem_cons.mp hx with hx | hx
    · exact hc hx.symm
    · rcases List.mem_append.mp hx with hx | hx
      · exact hg a hx
      · exact hf hx

theorem footer_not_mem {t : Token} (h : f.ids.imEnd ≠ t) : .ctrl t ∉ footerSyms f := by
  simp [footerSyms, Ne.symm h]

theorem syms_footer (o : Nat) (l : Bool) : syms (footer f o l) = footerSyms f := by
  simp [footer, footerSyms, ctl, txt, Piece.syms]

theorem takeText_footer : takeText (footerSyms f) = ([], footerSyms f) := rfl

/-! ### Content and calls -/

/-- The symbols of one call after `<tool_call>`. -/
@[expose] def gC (k : Call) : List Sym :=
  lit (callPre ++ k.name ++ callSep ++ k.args ++ callPost) ++ [.ctrl f.ids.callClose]

theorem callsItems_syms (o : Nat) : ∀ (ks : List Call) (k : Call) (first : Bool),
    syms (callsItems f first o (k :: ks)) ++ footerSyms f =
      (if first then lit ['\n'] else []) ++
        (piecesOf (gC f) (lit ['\n']) (footerSyms f) (k :: ks)).flatMap (.ctrl f.ids.callOpen :: ·)
  | [], k, first => by
    cases first <;> simp [callsItems, callItems, piecesOf, gC, ctl, txt, lit, Piece.syms]
  | k2 :: ks, k, first => by
    show syms (callItems f first k o ++ callsItems f true o (k2 :: ks)) ++ footerSyms f = _
    rw [syms_append, List.append_assoc, callsItems_syms o ks k2 true,
      piecesOf_cons_of_ne_nil _ _ _ k (k2 :: ks) (List.cons_ne_nil _ _), List.flatMap_cons]
    cases first <;> simp [callItems, gC, ctl, txt, lit, Piece.syms]

theorem callPiece_gC (k : Call) (h : clearOf callSep k.name = true) (t : List Sym) :
    callPiece f (gC f k ++ t) = some (k, t) := by
  unfold callPiece gC
  rw [List.append_assoc, List.singleton_append, takeText_lit_of _ _ rfl]
  have e1 : stripPrefix? callPre (callPre ++ k.name ++ callSep ++ k.args ++ callPost) =
      some (k.name ++ callSep ++ k.args ++ callPost) := by
    simp only [List.append_assoc, stripPrefix?_append]
  have e2 : stripSuffix? callPost (k.name ++ callSep ++ k.args ++ callPost) =
      some (k.name ++ callSep ++ k.args) := stripSuffix?_append _ _
  have e3 : splitFirst callSep (k.name ++ callSep ++ k.args) = some (k.name, k.args) :=
    splitFirst_of_clearOf _ h
  simp only [parseCall, e1, e2, e3, Option.bind_some, Option.map_some]
  simp

/-- Content and calls read back. -/
theorem contentCalls_read (hw : WfFacts f.ids) (cs : Chars) (sep : Bool) (calls : List Call)
    (o : Nat) (h1 : calls.all (fun k => clearOf callSep k.name) = true)
    (h2 : (calls.isEmpty || sep || cs.isEmpty) = true) (h3 : (!sep || !calls.isEmpty) = true) :
    ∃ x rest, lit cs ++ (syms (callsItems f sep o calls) ++ footerSyms f) = lit x ++ rest ∧
      takeText rest = ([], rest) ∧
      (∃ r, rest = .ctrl f.ids.callOpen :: r ∨ rest = .ctrl f.ids.imEnd :: r) ∧
      .ctrl f.ids.imStart ∉ rest ∧ .ctrl f.ids.imEnd ∈ rest ∧
      contentCalls f x rest = some (.text cs, sep, calls) := by
  cases calls with
  | nil =>
    cases sep
    · refine ⟨cs, footerSyms f, by simp [callsItems], rfl, ⟨_, Or.inr rfl⟩,
        footer_not_mem f hw.se.symm, by simp [footerSyms], ?_⟩
      simp [contentCalls]
    · cases h3
  | cons k ks =>
    have hk : ∀ k' ∈ k :: ks, clearOf callSep k'.name = true := by
      simpa using h1
    obtain ⟨r, hr⟩ := flatMap_piecesOf_cons (Sym.ctrl f.ids.callOpen) (gC f) (lit ['\n'])
      (footerSyms f) (List.cons_ne_nil k ks)
    have hpieces : ∀ p ∈ piecesOf (gC f) (lit ['\n']) (footerSyms f) (k :: ks),
        Sym.ctrl f.ids.callOpen ∉ p := by
      intro p hp
      obtain ⟨a, -, e | e⟩ := mem_piecesOf hp <;> subst e <;>
        simp [gC, lit, footerSyms, hw.oc, Ne.symm hw.eo]
    refine ⟨cs ++ (if sep then ['\n'] else []), _, ?_, ?_, ⟨r, Or.inl hr⟩, ?_, ?_, ?_⟩
    · rw [callsItems_syms]
      cases sep <;> simp
    · rw [hr]
      rfl
    · exact not_mem_piecesOf (fun h => hw.so (Sym.ctrl.inj h).symm)
        (fun a => by simp [gC, lit, hw.sc]) (by simp [lit]) (footer_not_mem f hw.se.symm) _
    · exact final_mem_piecesOf _ (by simp [footerSyms]) (List.cons_ne_nil k ks)
    · have hsplit := splitAtCtrl_flatMap f.ids.callOpen
        (piecesOf (gC f) (lit ['\n']) (footerSyms f) (k :: ks)) [] (by simp) hpieces
      rw [List.nil_append] at hsplit
      have hparse := parsePieces_piecesOf (callPiece f) (gC f) id (lit ['\n']) (footerSyms f)
        (k :: ks) (List.cons_ne_nil k ks) (fun a ha t _ => callPiece_gC f a (hk a ha) t)
      rw [List.map_id] at hparse
      have hne : (piecesOf (gC f) (lit ['\n']) (footerSyms f) (k :: ks)).flatMap
          (Sym.ctrl f.ids.callOpen :: ·) ≠ footerSyms f := by
        rw [hr]
        intro h
        simp only [footerSyms, List.cons.injEq, Sym.ctrl.injEq] at h
        exact hw.eo h.1.symm
      simp only [contentCalls, hne, ↓reduceIte, hsplit, ne_eq, not_true_eq_false, hparse,
        Option.bind_some]
      cases sep
      · have hc : cs = [] := by simpa using h2
        subst hc
        simp
      · simp

end Read

end Verified.Qwen

end
