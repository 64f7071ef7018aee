module

public import Verified.Spec.LlamaPlain
public import Verified.Thm.Llama

public section

/-!
# Llama 3's loop is lawful

`format0` (`Spec/LlamaPlain.lean`) lays out with the Llama structure's `layout`, so the two
laws about the layout alone (control tokens reserved, owners not written) are the structure's
(`ctrl_reserved_layout`, `syms_layout_erase`). What is new is the lowering and the reader:

* `unlayout_layout0`: every conversation lowering accepts reads back from its symbols (up to
  owners), because every turn it makes is a plain turn of a role the reader names
  (`roleOf_name`) and no turn's chunk holds `<|start_header_id|>`;
* `layout_of_unlayout0`: whatever the reader returns lays out to its input.

`lawful0` puts them together: `Format.Lawful` for every `LlamaFmt` with distinct control
ids, so `parse_render`, `render_parse`, `render_injective` and `no_forgery` (`Thm/Format.lean`)
hold for Llama 3's entry (`llama30_lawful`) with no proof of its own.
-/

namespace Verified.Llama

open Verified

/-! ## Roles -/

/-- The `assistant` header is not the `developer` header. -/
theorem assistant_ne_developer :
    ['a', 's', 's', 'i', 's', 't', 'a', 'n', 't'] ≠ ['d', 'e', 'v', 'e', 'l', 'o', 'p', 'e', 'r'] := by
  decide

/-- The reader names every role lowering writes. -/
theorem roleOf_name (r : LRole) : roleOf r.name = some r := by
  obtain ⟨h1, -, -, h4, h5, -⟩ := role_ne
  obtain ⟨d1, d2, -⟩ := developer_ne
  cases r <;> simp [roleOf, LRole.name, h1, h4, h5, d1, d2, assistant_ne_developer]

/-- A role the reader names is written as that role's header. -/
theorem roleOf_eq_some {role : Chars} {r : LRole} (h : roleOf role = some r) :
    role = r.name := by
  unfold roleOf at h
  split at h
  · rename_i hr
    cases h
    exact hr
  · split at h
    · rename_i hr
      cases h
      exact hr
    · split at h
      · rename_i hr
        cases h
        exact hr
      · split at h
        · rename_i hr
          cases h
          exact hr
        · cases h

/-! ## The shape of lowering -/

/-- A plain turn with a text payload. -/
@[expose] def LTurn.plainText : LTurn → Bool
  | .plain _ (.text _) _ => true
  | _ => false

/-- Every turn lowering makes of a message is a plain turn or a sampled one. -/
theorem lowerMsg0_shape {i : Nat} {m : Message} {t : LTurn} (h : lowerMsg0 i m = some t) :
    (∃ r p, t = .plain r p i) ∨ ∃ ts, t = .sampled ts i := by
  unfold lowerMsg0 at h
  split at h
  · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact .inl ⟨_, _, rfl⟩
  · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact .inl ⟨_, _, rfl⟩
  · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact .inl ⟨_, _, rfl⟩
  · cases h
  · split at h
    · cases h
      exact .inr ⟨_, rfl⟩
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact .inl ⟨_, _, rfl⟩

/-- A textual turn of lowering is a plain text turn. -/
theorem plainText_of_lowerMsg0 {i : Nat} {m : Message} {t : LTurn} (h : lowerMsg0 i m = some t)
    (ht : t.textual = true) : t.plainText = true := by
  rcases lowerMsg0_shape h with ⟨r, p, rfl⟩ | ⟨ts, rfl⟩
  · cases p with
    | text _ => rfl
    | toks _ => simp [LTurn.textual, payText] at ht
  · simp [LTurn.textual] at ht

/-- Every turn of `lowerMsgs0` is lowered from one message. -/
theorem lowerMsgs0_mem : ∀ {i : Nat} {ms : List Message} {ts : List LTurn},
    lowerMsgs0 i ms = some ts → ∀ t ∈ ts, ∃ j m, lowerMsg0 j m = some t
  | _, [], ts, h, t, ht => by
    simp only [lowerMsgs0, Option.some.injEq] at h
    subst h
    cases ht
  | i, m :: ms, ts, h, t, ht => by
    simp only [lowerMsgs0] at h
    cases hm : lowerMsg0 i m with
    | none => rw [hm] at h; cases h
    | some u =>
      rw [hm, Option.bind_some] at h
      obtain ⟨us, hus, rfl⟩ := Option.map_eq_some_iff.mp h
      rcases List.mem_cons.mp ht with rfl | ht'
      · exact ⟨i, m, hm⟩
      · exact lowerMsgs0_mem hus t ht'

/-- A message list that is not empty lowers to a turn list that is not empty. -/
theorem lowerMsgs0_cons {i : Nat} {m : Message} {ms : List Message} {ts : List LTurn}
    (h : lowerMsgs0 i (m :: ms) = some ts) : ∃ t ts', ts = t :: ts' := by
  simp only [lowerMsgs0] at h
  cases hm : lowerMsg0 i m with
  | none => rw [hm] at h; cases h
  | some u =>
    rw [hm, Option.bind_some] at h
    obtain ⟨us, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨u, us, rfl⟩

/-! ## Reading a layout back -/

/-- The reader gives a plain text turn back from its chunk (owner 0). -/
theorem unlayoutTurn0_chunk (f : LlamaFmt) (t : LTurn) (ht : t.plainText = true) :
    unlayoutTurn0 f (chunk f t) = some t.erase := by
  cases t with
  | plain r p o =>
    cases p with
    | text x => simp [unlayoutTurn0, chunk, bodyText, turnBody_body, roleOf_name, LTurn.erase]
    | toks _ => simp [LTurn.plainText] at ht
  | _ => simp [LTurn.plainText] at ht

theorem unlayoutRest0_cons (f : LlamaFmt) (c : List Sym) (cs : List (List Sym))
    (hc : .ctrl f.ids.startHeader :: c ≠ syms (promptItems f 0)) :
    unlayoutRest0 f (c :: cs) = (unlayoutTurn0 f c).bind fun t =>
      (unlayoutRest0 f cs).map fun q => ⟨t :: q.turns, q.prompt⟩ := by
  cases cs with
  | nil =>
    simp only [unlayoutRest0, hc, ↓reduceIte]
    cases unlayoutTurn0 f c <;> rfl
  | cons d ds => rfl

theorem unlayoutRest0_chunks (f : LlamaFmt) (hf : f.ids.wf = true) (ts : List LTurn)
    (p : Option Nat) (h : ∀ t ∈ ts, t.plainText = true) :
    unlayoutRest0 f (ts.map (chunk f) ++ pchunks f p) =
      some ⟨ts.map LTurn.erase, p.map fun _ => 0⟩ := by
  induction ts with
  | nil =>
    cases p with
    | none => rfl
    | some o =>
      show unlayoutRest0 f [pchunk f] = _
      simp only [unlayoutRest0]
      rw [if_pos (syms_promptItems f 0).symm]
      rfl
  | cons t ts ih =>
    rw [List.map_cons, List.cons_append, unlayoutRest0_cons f _ _ (chunk_ne_prompt f hf t),
      unlayoutTurn0_chunk f t (h t List.mem_cons_self), Option.bind_some,
      ih (fun t' ht' => h t' (List.mem_cons_of_mem _ ht'))]
    rfl

/-- `unlayout0` reads back the layout of every lowered conversation whose turns are textual. -/
theorem unlayout_layout0 (f : LlamaFmt) (hf : f.ids.wf = true) (c : Conversation) (l : LConv)
    (hl : lower0 f c = some l) (ht : ∀ t ∈ l.turns, t.textual = true) :
    unlayout0 f (syms (layout f l)) = some l.erase := by
  obtain ⟨hbs, -, -, -, -, -⟩ := ids_ne hf
  unfold lower0 at hl
  split at hl
  · cases hl
  · cases hts : lowerMsgs0 0 c.messages with
    | none => rw [hts] at hl; cases hl
    | some ts =>
      rw [hts, Option.bind_some] at hl
      split at hl
      · cases hl
        rename_i hne _
        have hplain : ∀ t ∈ ts, t.plainText = true := fun t h' => by
          obtain ⟨j, m, hm⟩ := lowerMsgs0_mem hts t h'
          exact plainText_of_lowerMsg0 hm (ht t h')
        obtain ⟨t, ts', rfl⟩ : ∃ t ts', ts = t :: ts' := by
          cases hms : c.messages with
          | nil => simp [hms] at hne
          | cons m ms => rw [hms] at hts; exact lowerMsgs0_cons hts
        generalize (if c.addGenerationPrompt = true then some c.messages.length else none) = P
        have hnot : ∀ ch ∈ (t :: ts').map (chunk f) ++ pchunks f P,
            .ctrl f.ids.startHeader ∉ ch := by
          intro ch hch
          rcases List.mem_append.mp hch with hch | hch
          · obtain ⟨u, -, rfl⟩ := List.mem_map.mp hch
            exact not_mem_chunk f hf u
          · cases P with
            | none => cases hch
            | some o =>
              simp only [pchunks, List.mem_singleton] at hch
              subst hch
              exact not_mem_pchunk f hf
        have hbos : Sym.ctrl f.ids.startHeader ∉ [Sym.ctrl f.ids.bos] := by
          simp [Ne.symm hbs]
        rw [syms_layout f _ _ ht]
        unfold unlayout0
        rw [splitAtCtrl_chunks _ _ _ hbos hnot]
        simp only [ne_eq, not_true_eq_false, ↓reduceIte, List.map_cons, List.cons_append]
        rw [unlayoutTurn0_chunk f t (hplain t List.mem_cons_self), Option.bind_some,
          unlayoutRest0_chunks f hf ts' P (fun u hu => hplain u (List.mem_cons_of_mem _ hu))]
        rfl
      · cases hl

/-! ## The reader never invents a conversation -/

theorem unlayoutTurn0_eq_some {f : LlamaFmt} {c : List Sym} {t : LTurn}
    (h : unlayoutTurn0 f c = some t) : .ctrl f.ids.startHeader :: c = syms (turnItems f t) := by
  unfold unlayoutTurn0 at h
  cases hb : turnBody f c with
  | none => rw [hb] at h; cases h
  | some rx =>
    obtain ⟨role, x⟩ := rx
    rw [hb, Option.bind_some] at h
    dsimp only at h
    obtain ⟨r, hr, rfl⟩ := Option.map_eq_some_iff.mp h
    rw [turnBody_eq_some hb, roleOf_eq_some hr,
      syms_turnItems_textual f (.plain r (.text x) 0) rfl]
    rfl

theorem unlayoutRest0_eq_some {f : LlamaFmt} : ∀ {cs : List (List Sym)} {q : LConv},
    unlayoutRest0 f cs = some q →
      cs.flatMap (.ctrl f.ids.startHeader :: ·) =
        syms (q.turns.flatMap (turnItems f) ++ promptOf f q.prompt)
  | [], q, h => by
    simp only [unlayoutRest0, Option.some.injEq] at h
    subst h
    rfl
  | [c], q, h => by
    simp only [unlayoutRest0] at h
    split at h
    · rename_i hc
      cases h
      simp only [List.flatMap_cons, List.flatMap_nil, List.append_nil]
      rw [hc]
      rfl
    · obtain ⟨t, ht, rfl⟩ := Option.map_eq_some_iff.mp h
      simp [unlayoutTurn0_eq_some ht, promptOf]
  | c :: d :: ds, q, h => by
    simp only [unlayoutRest0] at h
    cases ht : unlayoutTurn0 f c with
    | none => rw [ht] at h; cases h
    | some t =>
      rw [ht, Option.bind_some] at h
      obtain ⟨q', hq', rfl⟩ := Option.map_eq_some_iff.mp h
      exact flatMap_cons_eq (unlayoutTurn0_eq_some ht) (unlayoutRest0_eq_some hq')

/-- What `unlayout0` returns lays out to its input. -/
theorem layout_of_unlayout0 (f : LlamaFmt) (s : List Sym) (l : LConv)
    (h : unlayout0 f s = some l) : syms (layout f l) = s := by
  have hj := splitAtCtrl_join f.ids.startHeader s
  unfold unlayout0 at h
  dsimp only at h
  split at h
  · cases h
  · rename_i hb
    have hb' : (splitAtCtrl f.ids.startHeader s).1 = [.ctrl f.ids.bos] := by simpa using hb
    rw [hb'] at hj
    split at h
    · rename_i c cs hr
      rw [hr] at hj
      cases ht : unlayoutTurn0 f c with
      | none => rw [ht] at h; cases h
      | some t =>
        rw [ht, Option.bind_some] at h
        obtain ⟨q, hq, rfl⟩ := Option.map_eq_some_iff.mp h
        rw [← hj]
        exact layout_cons_eq f t q c cs
          (flatMap_cons_eq (unlayoutTurn0_eq_some ht) (unlayoutRest0_eq_some hq))
    · cases h

/-! ## Lawful -/

/-- Llama 3's loop is `Format.Lawful` for every `LlamaFmt` with distinct control ids. -/
theorem lawful0 (f : LlamaFmt) (hf : f.ids.wf = true) : (format0 f).Lawful := by
  refine ⟨?_, layout_of_unlayout0 f, ctrl_reserved_layout f, syms_layout_erase f⟩
  intro c l hl ht
  exact unlayout_layout0 f hf c l hl (textual_of_textOnly f l ht)

/-- Llama 3's entry is lawful (its control ids decided distinct in the kernel). -/
theorem llama30_lawful : (format0 llama30).Lawful :=
  lawful0 llama30 (by decide)

end Verified.Llama

end
