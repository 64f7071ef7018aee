module

public import Verified.Thm.MistralV3Sound

public section

/-!
# Mistral v3 is lawful

Version v3 of the Mistral structure (`Spec/MistralV3.lean`: Mistral 7B Instruct v0.3 with
SentencePiece's dummy prefix, Mistral Nemo without):

* `unlayout_layoutV3`: every conversation lowering accepts reads back (up to owners) from a
  text-only layout, because each turn it makes (`V3Good`: no system turn, results without ids,
  calls of v7's shape only after empty content; `lowerV3_good`) reads back whatever follows it
  (`readTurnV3`);
* with `layout_unlayoutV3`, `ctrl_reservedV3` and `syms_eraseV3` (`Thm/MistralV3Sound.lean`),
  `lawfulV3` is `Format.Lawful` for every `V3Fmt` whose named ids are distinct;
  `mistral7bV03_lawful` and `nemoV3_lawful` are the two entries', by `decide` on their ids.
-/

namespace Verified.Mistral

open Verified

variable (g : V3Fmt)

/-! ## The turns lowering writes -/

/-- A turn as v3 lowering writes it: never a system turn (system texts are folded into a user
message), a result without an id, calls of v7's shape only after empty content. -/
@[expose] def V3Good : MTurn → Prop
  | .system _ _ => False
  | .assistant p cs _ => (cs ≠ [] → p = .text []) ∧ ∀ k ∈ cs, CallGood ⟨g.ids, .v7, false⟩ k
  | .result i _ _ => i = none
  | _ => True

theorem lowerMsgV3_good {tools sys : Option Chars} {isLast : Bool} {pend : List (Option Chars)}
    {i : Nat} {m : Message} {t : MTurn}
    (h : lowerMsgV3 g tools sys isLast pend.head? i m = some t) : V3Good g t := by
  unfold lowerMsgV3 at h
  split at h
  · obtain ⟨p, -, h⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨p', -, rfl⟩ := Option.map_eq_some_iff.mp h
    trivial
  · split at h
    · cases h
      trivial
    · obtain ⟨⟨p, cs⟩, hb, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨cs', hc, h⟩ := Option.bind_eq_some_iff.mp h
      split at h
      · cases h
      · rename_i hboth
        split at h
        · cases h
        · cases h
          refine ⟨fun hne => ?_, callIds_good ⟨g.ids, .v7, false⟩ hc (bodyOf_args hb)⟩
          have hp : isEmptyText p = true := by
            cases hp : isEmptyText p
            · simp [hp, List.isEmpty_iff, hne] at hboth
            · rfl
          cases p with
          | text x => cases x with
            | nil => rfl
            | cons _ _ => simp [isEmptyText] at hp
          | toks _ => simp [isEmptyText] at hp
  · split at h
    · cases h
      rfl
    · cases h
  · cases h

theorem lowerMsgsV3_good (tools : Option Chars) (pos : Option Nat) (sys : Option Chars)
    (last : Option Nat) :
    ∀ (ms : List Message) (prev : Option Role) (prevT : Option MTurn) (pend : List (Option Chars))
      (i : Nat) (ts : List MTurn), lowerMsgsV3 g tools pos sys last prev prevT pend i ms = some ts →
      ∀ t ∈ ts, V3Good g t := by
  intro ms
  induction ms with
  | nil =>
    intro prev prevT pend i ts h
    simp only [lowerMsgsV3, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | cons m ms ih =>
    intro prev prevT pend i ts h
    simp only [lowerMsgsV3] at h
    split at h
    · obtain ⟨-, h⟩ := ite_none_eq_some h
      exact ih _ _ _ _ _ h
    · obtain ⟨-, h⟩ := ite_none_eq_some h
      cases hm : lowerMsgV3 g (if pos = some i then tools else none) sys (last = some i)
          pend.head? i m with
      | none => rw [hm] at h; cases h
      | some t =>
        rw [hm, Option.bind_some] at h
        obtain ⟨-, h⟩ := ite_none_eq_some h
        obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
        intro t' ht'
        rcases List.mem_cons.mp ht' with rfl | ht'
        · exact lowerMsgV3_good g hm
        · exact ih _ _ _ _ _ hts t' ht'

/-- Every turn of a v3 lowering is as lowering writes it and passes `turnOkV3`. -/
theorem lowerV3_good {c : Conversation} {l : MConv} (h : lowerV3 g c = some l) :
    ∀ t ∈ l.turns, V3Good g t ∧ turnOkV3 g t = true := by
  unfold lowerV3 at h
  obtain ⟨tools, -, h⟩ := Option.bind_eq_some_iff.mp h
  obtain ⟨sysTs, -, h⟩ := Option.bind_eq_some_iff.mp h
  try dsimp only at h
  obtain ⟨-, h⟩ := ite_none_eq_some h
  obtain ⟨ts, hts, h⟩ := Option.bind_eq_some_iff.mp h
  split at h
  · rename_i hok
    cases h
    intro t ht
    exact ⟨lowerMsgsV3_good g _ _ _ _ _ _ _ _ _ _ hts t ht, List.all_eq_true.mp hok t ht⟩
  · cases h

/-! ## Reading the turns back -/

theorem untilSp_lit (c : Token) (x : Chars) (Y : List Sym) :
    untilSp g c (lit (sp g x) ++ .ctrl c :: Y) = some (x, Y) := by
  unfold untilSp
  rw [untilCtrl_lit]
  simp [unsp_sp]

/-- A stream that does not open with a tools, instruction or results control is read as an
assistant turn. -/
theorem unlayoutTurnsV3_asst (n : Nat) (s : List Sym) (hs : s ≠ [])
    (hc : ∀ t s', s = .ctrl t :: s' → t ≠ g.ids.tools ∧ t ≠ g.ids.inst ∧ t ≠ g.ids.results) :
    unlayoutTurnsV3 g (n + 1) s = (unlayoutAssistantV3 g s).bind fun (a, r) =>
      (unlayoutTurnsV3 g n r).map (a :: ·) := by
  rcases s with _ | ⟨t | ch | t, s⟩
  · exact absurd rfl hs
  · obtain ⟨h1, h2, h3⟩ := hc t s rfl
    conv => lhs; unfold unlayoutTurnsV3
    simp only [h1, h2, h3, ↓reduceIte]
  · rfl
  · rfl

/-- The calls of an assistant turn read back, up to `</s>`. -/
theorem unlayoutCallsV3_read (hw : V3Facts g.ids) (p : Chars) (cs : List MCall) (R : List Sym)
    (hp : cs ≠ [] → p = []) (hk : ∀ k ∈ cs, JGood k) :
    unlayoutCallsV3 g p (callsSymsV3 g cs ++ .ctrl g.ids.eos :: R) =
      some (cs, .ctrl g.ids.eos :: R) := by
  cases cs with
  | nil =>
    simp only [callsSymsV3_nil, List.nil_append, unlayoutCallsV3, hw.e_c, ↓reduceIte]
  | cons k ks =>
    have hp0 : p = [] := hp (List.cons_ne_nil _ _)
    subst hp0
    have hlen : (k :: ks).length ≤ (joinObjs ((k :: ks).map callJson) ++ [']']).length := by
      have := len_joinObjs (k :: ks)
      simp only [List.length_append] at this ⊢
      omega
    rw [callsSymsV3_cons, List.cons_append]
    unfold unlayoutCallsV3
    try dsimp only
    rw [if_pos rfl, Qwen.takeText_lit_of _ _ rfl]
    simp only [unsp_sp, Option.bind_some, callsJson_eq, List.isEmpty_nil, ↓reduceIte]
    rw [unCallsJson_read (k :: ks) _ (List.cons_ne_nil _ _) hlen hk]
    simp

/-- A text turn as v3 lowering writes it reads back (owner erased), whatever follows it. -/
theorem readTurnV3 (hw : V3Facts g.ids) (t : MTurn) (hg : V3Good g t)
    (hok : turnOkV3 g t = true) (htx : t.textual = true) (m : Nat) (R : List Sym) :
    unlayoutTurnsV3 g (m + 1) (syms (turnItemsV3 g t) ++ R) =
      (unlayoutTurnsV3 g m R).map (t.erase :: ·) := by
  cases t with
  | system p o => exact absurd hg id
  | user j p o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    cases j with
    | none =>
      have e : syms (turnItemsV3 g (.user none (.text x) o)) ++ R =
          .ctrl g.ids.inst :: (lit (sp g x) ++ .ctrl g.ids.endInst :: R) := by
        simp [turnItemsV3, spPay]
      rw [e]
      conv => lhs; unfold unlayoutTurnsV3
      simp only [Ne.symm hw.t_i, ↓reduceIte, untilSp_lit, Option.bind_some, MTurn.erase]
    | some j =>
      have e : syms (turnItemsV3 g (.user (some j) (.text x) o)) ++ R =
          .ctrl g.ids.tools :: (lit (sp g j) ++ .ctrl g.ids.endTools :: .ctrl g.ids.inst ::
            (lit (sp g x) ++ .ctrl g.ids.endInst :: R)) := by
        simp [turnItemsV3, spPay]
      rw [e]
      conv => lhs; unfold unlayoutTurnsV3
      simp only [↓reduceIte, untilSp_lit, Option.bind_some, MTurn.erase]
  | result i p o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    have hi : i = none := hg
    subst hi
    have e : syms (turnItemsV3 g (.result none (.text x) o)) ++ R =
        .ctrl g.ids.results :: (lit (sp g x) ++ .ctrl g.ids.endResults :: R) := by
      simp [turnItemsV3, spPay]
    rw [e]
    conv => lhs; unfold unlayoutTurnsV3
    simp only [Ne.symm hw.t_r, Ne.symm hw.i_r, ↓reduceIte, untilSp_lit, Option.bind_some,
      MTurn.erase]
  | assistant p cs o =>
    rcases p with x | ts
    rotate_left
    · simp [MTurn.textual, isTextP] at htx
    obtain ⟨hp, hcg⟩ := hg
    have hp' : cs ≠ [] → x = [] := fun h => by
      have := hp h
      simp only [LPay.text.injEq] at this
      exact this
    simp only [turnOkV3, Bool.and_eq_true, List.all_eq_true] at hok
    have hk : ∀ k ∈ cs, JGood k := fun k h => by
      have hk2 := hok.2 k h
      exact jGood_of ⟨g.ids, .v7, false⟩ rfl ⟨hcg k h, hk2.1, fun _ => hk2.2⟩
    have e : syms (turnItemsV3 g (.assistant (.text x) cs o)) ++ R =
        lit (sp g x) ++ (callsSymsV3 g cs ++ .ctrl g.ids.eos :: R) := by
      rw [syms_assistantV3]
      simp
    have hA : unlayoutAssistantV3 g (syms (turnItemsV3 g (.assistant (.text x) cs o)) ++ R) =
        some (.assistant (.text x) cs 0, R) := by
      rw [e]
      unfold unlayoutAssistantV3
      have ht0 : takeText (callsSymsV3 g cs ++ .ctrl g.ids.eos :: R) =
          ([], callsSymsV3 g cs ++ .ctrl g.ids.eos :: R) := by
        cases cs <;> rfl
      rw [Qwen.takeText_lit_of _ _ ht0]
      simp only [unsp_sp, Option.bind_some]
      rw [unlayoutCallsV3_read g hw x cs R hp' hk]
      simp
    rw [unlayoutTurnsV3_asst g m _ (by rw [e]; simp) ?_, hA]
    · rfl
    · intro t s' hts
      rw [e] at hts
      cases x with
      | cons c x =>
        cases hd : g.dummy <;> simp [sp, hd] at hts
      | nil =>
        cases cs with
        | nil =>
          simp only [sp, lit_nil, List.nil_append, callsSymsV3_nil, List.cons.injEq,
            Sym.ctrl.injEq] at hts
          obtain ⟨rfl, -⟩ := hts
          exact ⟨hw.e_t, hw.e_i, hw.e_r⟩
        | cons k ks =>
          simp only [sp, lit_nil, List.nil_append, List.cons_append, callsSymsV3_cons,
            List.cons.injEq, Sym.ctrl.injEq] at hts
          obtain ⟨rfl, -⟩ := hts
          exact ⟨hw.c_t, hw.c_i, hw.c_r⟩
  | sampled ts o => simp [MTurn.textual] at htx

theorem readTurnsV3 (hw : V3Facts g.ids) :
    ∀ (ts : List MTurn) (n : Nat), ts.length ≤ n →
      (∀ t ∈ ts, V3Good g t ∧ turnOkV3 g t = true ∧ t.textual = true) →
      unlayoutTurnsV3 g n (syms (ts.flatMap (turnItemsV3 g))) = some (ts.map MTurn.erase) := by
  intro ts
  induction ts with
  | nil => intro n _ _; cases n <;> rfl
  | cons t ts ih =>
    intro n hn hall
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    obtain ⟨hg, hok, htx⟩ := hall t List.mem_cons_self
    rw [List.flatMap_cons, syms_append, readTurnV3 g hw t hg hok htx m,
      ih m (by simp at hn; omega) (fun t' h' => hall t' (List.mem_cons_of_mem _ h'))]
    rfl

/-- Every turn lowering writes places at least one symbol. -/
theorem len_turnsV3 : ∀ ts : List MTurn, (∀ t ∈ ts, V3Good g t) →
    ts.length ≤ (syms (ts.flatMap (turnItemsV3 g))).length
  | [], _ => by simp
  | t :: ts, h => by
    have ih := len_turnsV3 ts (fun t' h' => h t' (List.mem_cons_of_mem _ h'))
    have h1 : 1 ≤ (syms (turnItemsV3 g t)).length := by
      have hg := h t List.mem_cons_self
      cases t with
      | system p o => exact absurd hg id
      | user j p o => cases j <;> simp [turnItemsV3]
      | assistant p cs o => cases cs <;> simp [turnItemsV3] <;> omega
      | result i p o => simp [turnItemsV3]
      | sampled ts o => simp [turnItemsV3]
    simp only [List.flatMap_cons, syms_append, List.length_append, List.length_cons] at ih h1 ⊢
    omega

/-- A turn lowering writes whose items are text-only has text payloads. -/
theorem textual_of_textOnlyV3 (t : MTurn) (hg : V3Good g t)
    (h : textOnly (turnItemsV3 g t) = true) : t.textual = true := by
  have tx : ∀ (p : LPay) (o : Nat) (l : Bool), pay (spPay g p) o l ∈ turnItemsV3 g t →
      isTextP p = true := by
    intro p o l hm
    have := isTextP_of_mem h hm
    cases p with
    | text _ => rfl
    | toks _ => simp [spPay, isTextP] at this
  cases t with
  | system p o => exact absurd hg id
  | user j p o => exact tx p o false (by cases j <;> simp [turnItemsV3])
  | assistant p cs o => exact tx p o true (by simp [turnItemsV3])
  | result i p o => exact tx p o false (by simp [turnItemsV3])
  | sampled ts o =>
    unfold textOnly at h
    have := List.all_eq_true.mp h ⟨.toks ts, ⟨o, true⟩⟩ (by simp [turnItemsV3])
    simp [Piece.isToks] at this

/-! ## The round trip -/

/-- `unlayoutV3` inverts `layoutV3` (up to owners) on every lowered conversation whose layout
is text-only, for distinct named ids. -/
theorem unlayout_layoutV3 (hn : nodupB g.ids.named = true) {c : Conversation} {l : MConv}
    (hl : lowerV3 g c = some l) (htx : textOnly (layoutV3 g l) = true) :
    unlayoutV3 g (syms (layoutV3 g l)) = some l.erase := by
  have hw := v3Facts hn
  have hgood := lowerV3_good g hl
  obtain ⟨ts, p⟩ := l
  have hall : ∀ t ∈ ts, V3Good g t ∧ turnOkV3 g t = true ∧ t.textual = true := by
    intro t ht
    refine ⟨(hgood t ht).1, (hgood t ht).2, textual_of_textOnlyV3 g t (hgood t ht).1 ?_⟩
    unfold textOnly at htx ⊢
    refine List.all_eq_true.mpr fun it hit => List.all_eq_true.mp htx it ?_
    unfold layoutV3
    exact List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hit⟩)
  have e : syms (layoutV3 g ⟨ts, p⟩) = .ctrl g.ids.bos :: syms (ts.flatMap (turnItemsV3 g)) := by
    simp [layoutV3]
  rw [e]
  unfold unlayoutV3
  simp only [↓reduceIte, readTurnsV3 g hw ts _ (len_turnsV3 g ts fun t h => (hall t h).1) hall,
    Option.map_some]
  rfl

/-- Mistral v3 is lawful for every `V3Fmt` whose named ids are distinct. -/
theorem lawfulV3 (hn : nodupB g.ids.named = true) : (formatV3 g).Lawful :=
  ⟨fun _ _ hl ht => unlayout_layoutV3 g hn hl ht, fun s l h => layout_unlayoutV3 g s l h,
    ctrl_reservedV3 g, syms_eraseV3 g⟩

/-- Mistral 7B Instruct v0.3 (the SentencePiece v3 vocabulary, its dummy prefix). -/
theorem mistral7bV03_lawful : (formatV3 mistral7bV03).Lawful :=
  lawfulV3 _ v3Ids_nodup

/-- Mistral Nemo with the v3 tokenizer (tekken, no dummy prefix). -/
theorem nemoV3_lawful : (formatV3 nemoV3).Lawful :=
  lawfulV3 _ nemoIds_nodup

end Verified.Mistral

end
