module

public import Verified.Spec.MistralTemplate
public import Verified.Thm.MistralRound

public section

/-!
# The Mistral templates' loops are lawful

`formatT` and `formatS` (`Spec/MistralTemplate.lean`) lay out and read back with the Mistral
structure's `layout` and `unlayout`, whose read-back (`readTurns`) asks each turn only to be as
lowering writes it (`TGood`: call ids of the version, result ids present), to pass `turnOk` and
to be textual. So:

* `unlayout_layout_good`: the structure's round trip, stated for any list of such turns;
* `lowerT_good`, `lowerS_good`: the turns of both loops are such turns (assistant text kept as
  given changes no call, the default system turn is text);
* `lawfulT`, `lawfulS`: `Format.Lawful` for every record whose ids are well formed for its
  version, whatever the default text; `tekkenT_lawful`, `tekkenS_lawful` for the tekken
  vocabulary every entry of these templates uses, with no proof per entry.
-/

namespace Verified.Mistral

open Verified

/-! ## The structure's round trip, for any well-made turns -/

/-- `unlayout` inverts `layout` (up to owners) on every text-only layout of turns that are as
lowering writes them and pass `turnOk`. -/
theorem unlayout_layout_good (f : MistralFmt) (hf : f.ids.wf f.version = true) {l : MConv}
    (hgood : ∀ t ∈ l.turns, TGood f t ∧ turnOk f t = true)
    (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  obtain ⟨ts, p⟩ := l
  have hall : ∀ t ∈ ts, TGood f t ∧ turnOk f t = true ∧ t.textual = true := by
    intro t ht
    refine ⟨(hgood t ht).1, (hgood t ht).2, textual_of_textOnly f t ?_⟩
    unfold textOnly at htx ⊢
    refine List.all_eq_true.mpr fun it hit => List.all_eq_true.mp htx it ?_
    unfold layout
    exact List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hit⟩)
  have e : syms (layout f ⟨ts, p⟩) = .ctrl f.ids.bos :: syms (ts.flatMap (turnItems f)) := by
    simp [layout]
  rw [e]
  unfold unlayout
  simp only [↓reduceIte, readTurns f hw ts _ (len_turns f ts) hall, Option.map_some]
  rfl

/-! ## The 2512 templates -/

section Template

variable (g : MistralTFmt)

theorem lowerMsgT_good {tools : Option Chars} {pend : List (Option Chars)} {i : Nat}
    {m : Message} {t : MTurn} (h : lowerMsgT g tools pend.head? i m = some t)
    (hp : PendOk pend) : TGood g.fmt t := by
  unfold lowerMsgT at h
  split at h
  · split at h
    · cases h
      trivial
    · obtain ⟨⟨p, cs⟩, hb, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨cs', hc, h⟩ := Option.bind_eq_some_iff.mp h
      split at h
      · cases h
      · cases h
        exact callIds_good g.fmt hc (bodyOf_args hb)
  · exact lowerMsg_good g.fmt h hp

theorem lowerMsgsT_good (tools : Option Chars) (pos : Option Nat) :
    ∀ (ms : List Message) (prev : Option Role) (prevT : Option MTurn) (pend : List (Option Chars))
      (i : Nat) (ts : List MTurn), lowerMsgsT g tools pos prev prevT pend i ms = some ts →
      PendOk pend → ∀ t ∈ ts, TGood g.fmt t := by
  intro ms
  induction ms with
  | nil =>
    intro prev prevT pend i ts h _
    simp only [lowerMsgsT, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | cons m ms ih =>
    intro prev prevT pend i ts h hp
    simp only [lowerMsgsT] at h
    obtain ⟨-, h⟩ := ite_none_eq_some h
    cases hm : lowerMsgT g (if pos = some i then tools else none) pend.head? i m with
    | none => rw [hm] at h; cases h
    | some t =>
      rw [hm, Option.bind_some] at h
      obtain ⟨-, h⟩ := ite_none_eq_some h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      have ht := lowerMsgT_good g hm hp
      intro t' ht'
      rcases List.mem_cons.mp ht' with rfl | ht'
      · exact ht
      · exact ih _ _ _ _ _ hts (pending_ok g.fmt ht hp) t' ht'

/-- A turn of `withDefault` is one of the turns or the default system turn. -/
theorem mem_withDefault {ms : List Message} {ts : List MTurn} {t : MTurn}
    (h : t ∈ withDefault g ms ts) : t ∈ ts ∨ t = .system (.text g.dflt) 0 := by
  unfold withDefault at h
  split at h
  · split at h
    · exact .inl h
    · rcases List.mem_cons.mp h with rfl | h
      · exact .inr rfl
      · exact .inl h
  · exact .inl h

/-- The default system turn is as lowering writes it and reads back. -/
theorem default_good (f : MistralFmt) (x : Chars) :
    TGood f (.system (.text x) 0) ∧ turnOk f (.system (.text x) 0) = true :=
  ⟨trivial, rfl⟩

/-- Every turn the 2512 templates' lowering writes is as lowering writes it and passes
`turnOk`. -/
theorem lowerT_good {c : Conversation} {l : MConv} (h : lowerT g c = some l) :
    ∀ t ∈ l.turns, TGood g.fmt t ∧ turnOk g.fmt t = true := by
  unfold lowerT at h
  split at h
  · cases h
  · obtain ⟨tools, -, h2⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts, hts, h3⟩ := Option.bind_eq_some_iff.mp h2
    split at h3
    · rename_i hc
      cases h3
      simp only [Bool.and_eq_true, List.all_eq_true] at hc
      intro t ht
      rcases mem_withDefault g ht with ht | rfl
      · exact ⟨lowerMsgsT_good g _ _ _ _ _ _ _ _ hts (fun y hy => by cases hy) t ht, hc.2 t ht⟩
      · exact default_good g.fmt g.dflt
    · cases h3

/-- The 2512 templates' loop is lawful for every record whose ids are well formed for its
version, whatever the default text. -/
theorem lawfulT (hf : g.fmt.ids.wf g.fmt.version = true) : (formatT g).Lawful :=
  ⟨fun _ _ hl ht => unlayout_layout_good g.fmt hf (lowerT_good g hl) ht,
    fun s l h => layout_unlayout g.fmt s l h, ctrl_reserved g.fmt, syms_erase g.fmt⟩

end Template

/-! ## Mistral Small 3 / 3.1 -/

section Small3

variable (g : MistralTFmt)

theorem lowerMsgS_good {i : Nat} {m : Message} {t : MTurn} (h : lowerMsgS i m = some t) :
    TGood g.fmt t := by
  unfold lowerMsgS at h
  split at h
  · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    trivial
  · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    trivial
  · split at h
    · cases h
      trivial
    · cases h
      intro k hk
      cases hk
    · cases h
      intro k hk
      cases hk
    · cases h
  · cases h

theorem lowerMsgsS_good : ∀ (i : Nat) (ms : List Message) (ts : List MTurn),
    lowerMsgsS i ms = some ts → ∀ t ∈ ts, TGood g.fmt t
  | _, [], ts, h, t, ht => by
    simp only [lowerMsgsS, Option.some.injEq] at h
    subst h
    cases ht
  | i, m :: ms, ts, h, t, ht => by
    simp only [lowerMsgsS] at h
    cases hm : lowerMsgS i m with
    | none => rw [hm] at h; cases h
    | some u =>
      rw [hm, Option.bind_some] at h
      obtain ⟨us, hus, rfl⟩ := Option.map_eq_some_iff.mp h
      rcases List.mem_cons.mp ht with rfl | ht
      · exact lowerMsgS_good g hm
      · exact lowerMsgsS_good (i + 1) ms us hus t ht

/-- Every turn Small 3's lowering writes is as lowering writes it and passes `turnOk`. -/
theorem lowerS_good {c : Conversation} {l : MConv} (h : lowerS g c = some l) :
    ∀ t ∈ l.turns, TGood g.fmt t ∧ turnOk g.fmt t = true := by
  unfold lowerS at h
  split at h
  · cases h
  · split at h
    · cases h
    · obtain ⟨ts, hts, h3⟩ := Option.bind_eq_some_iff.mp h
      split at h3
      · rename_i hc
        cases h3
        intro t ht
        refine ⟨?_, List.all_eq_true.mp hc t ht⟩
        rcases mem_withDefault g ht with ht | rfl
        · exact lowerMsgsS_good g 0 _ ts hts t ht
        · trivial
      · cases h3

/-- Small 3's loop is lawful for every record whose ids are well formed for its version,
whatever the default text. -/
theorem lawfulS (hf : g.fmt.ids.wf g.fmt.version = true) : (formatS g).Lawful :=
  ⟨fun _ _ hl ht => unlayout_layout_good g.fmt hf (lowerS_good g hl) ht,
    fun s l h => layout_unlayout g.fmt s l h, ctrl_reserved g.fmt, syms_erase g.fmt⟩

end Small3

/-! ## The entries -/

/-- Every entry of the 2512 templates on the tekken vocabulary (Ministral 3, Devstral Small 2,
Devstral 2), any version and mode, any default text. -/
theorem tekkenT_lawful (v : Version) (st : Bool) (dflt : Chars) :
    (formatT ⟨⟨tekkenIds, v, st⟩, dflt⟩).Lawful :=
  lawfulT _ (tekkenIds_wf v)

/-- Every entry of Small 3's template on the tekken vocabulary (Mistral Small 3, 3.1), any
version and mode, any default text (the date it stamps included). -/
theorem tekkenS_lawful (v : Version) (st : Bool) (dflt : Chars) :
    (formatS ⟨⟨tekkenIds, v, st⟩, dflt⟩).Lawful :=
  lawfulS _ (tekkenIds_wf v)

end Verified.Mistral

end
