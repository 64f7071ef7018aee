module

public import Verified.Spec.Tagged
public import Verified.Thm.Format
public import Verified.Thm.Items

public section

/-!
# Tagged turns: layouts and reading them back

Proven once over the structure's parameters, under `TaggedFmt.wf` (decided on each entry):

* `syms_turnItems_msg`, `syms_layout`: a turn is its header, think block, content, footer
  token and footer text; a layout is its turns then the generation prompt or `eosSyms`;
* `readTurn_chunk`: a header is found by the symbols alone (`headsApart`: no header is a
  prefix of another's), so a turn's chunk reads back as that turn;
* `unlayout_layout`: `unlayout` inverts `layout` (up to owners) on every text-only layout of a
  lowering (`lower_fits`: lowering writes a think block exactly on assistant turns of an entry
  with one, and only roles with a header);
* `layout_unlayout`: what `unlayout` returns lays out to its input;
* `ctrl_reserved_layout`, `syms_layout_erase`, and `lawful`: every tagged entry meeting `wf`
  satisfies `Format.Lawful`.
-/

namespace Verified.Tagged

open Verified

/-! ## The side conditions -/

section wf

variable {f : TaggedFmt} (h : f.wf = true)
include h

theorem wf_heads : pairwiseB headsApart f.heads = true := by
  simp only [TaggedFmt.wf, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.1.1.1.1.1.1

theorem wf_end_heads : ∀ e ∈ f.heads, Sym.ctrl f.endTurn ∉ partsSyms e.2 := by
  simp only [TaggedFmt.wf, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.1.1.1.1.1.2

theorem wf_end_think : f.endTurn ∉ thinkToks f := by
  simp only [TaggedFmt.wf, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.1.1.1.1.2

theorem wf_end_eos : f.endTurn ∉ f.eos.toList := by
  simp only [TaggedFmt.wf, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.1.1.1.2

theorem wf_fin : promptSyms f ≠ eosSyms f := by
  simp only [TaggedFmt.wf, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.1.1.2

theorem wf_reserved : ∀ t ∈ ctrlToks f, t ∈ f.reserved := by
  simp only [TaggedFmt.wf, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.2

end wf

/-! ## Headers -/

theorem roleCode_inj {a b : Role} (h : roleCode a = roleCode b) : a = b := by
  cases a <;> cases b <;> first | rfl | (simp [roleCode] at h)

theorem headsApart_spec {e e' : Role × List Part} (h : headsApart e e' = true) :
    roleCode e.1 ≠ roleCode e'.1 ∧ clash (partsSyms e.2) (partsSyms e'.2) = false ∧
      clash (partsSyms e'.2) (partsSyms e.2) = false := by
  refine ⟨?_, ?_, ?_⟩ <;> simp_all [headsApart]

theorem pairwiseB_cons {α : Type} {p : α → α → Bool} {x : α} {xs : List α}
    (h : pairwiseB p (x :: xs) = true) : (∀ y ∈ xs, p x y = true) ∧ pairwiseB p xs = true := by
  simpa only [pairwiseB, Bool.and_eq_true, List.all_eq_true] using h

/-- A header that clashes with no prefix of the stream does not strip from it. -/
theorem stripPrefix?_clash : ∀ {a b : List Sym} (z : List Sym), clash a b = false →
    stripPrefix? a (b ++ z) = none
  | [], _, _, h => by simp [clash] at h
  | _ :: _, [], _, h => by simp [clash] at h
  | x :: xs, y :: ys, z, h => by
    by_cases hxy : x = y
    · subst hxy
      have h' : clash xs ys = false := by simpa [clash] using h
      simpa [stripPrefix?] using stripPrefix?_clash z h'
    · simp [stripPrefix?, hxy]

theorem findHead_mem : ∀ {hs : List (Role × List Part)} {r : Role} {h : List Part},
    findHead hs r = some h → ∃ e ∈ hs, e.1 = r ∧ e.2 = h
  | [], _, _, hh => by simp [findHead] at hh
  | e :: es, r, h, hh => by
    by_cases hc : roleCode e.1 = roleCode r
    · have : findHead (e :: es) r = some e.2 := by simp [findHead, List.find?, hc]
      rw [this, Option.some.injEq] at hh
      exact ⟨e, List.mem_cons_self, roleCode_inj hc, hh⟩
    · have : findHead (e :: es) r = findHead es r := by
        simp only [findHead, List.find?, beq_false_of_ne hc]
      obtain ⟨e', he', h1, h2⟩ := findHead_mem (this ▸ hh)
      exact ⟨e', List.mem_cons_of_mem _ he', h1, h2⟩

/-- With headers of distinct roles, an entry is the header of its role. -/
theorem findHead_of_mem : ∀ {hs : List (Role × List Part)}, pairwiseB headsApart hs = true →
    ∀ {e}, e ∈ hs → findHead hs e.1 = some e.2
  | [], _, _, he => by cases he
  | e0 :: es, hp, e, he => by
    obtain ⟨hx, hp'⟩ := pairwiseB_cons hp
    rcases List.mem_cons.mp he with rfl | he'
    · simp [findHead, List.find?]
    · have hne : roleCode e0.1 ≠ roleCode e.1 := (headsApart_spec (hx e he')).1
      have : findHead (e0 :: es) e.1 = findHead es e.1 := by
        simp only [findHead, List.find?, beq_false_of_ne hne]
      rw [this]
      exact findHead_of_mem hp' he'

theorem findSome?_none {α β : Type} {g : α → Option β} :
    ∀ {l : List α}, (∀ x ∈ l, g x = none) → l.findSome? g = none
  | [], _ => rfl
  | x :: xs, h => by
    simp only [List.findSome?, h x List.mem_cons_self]
    exact findSome?_none fun y hy => h y (List.mem_cons_of_mem _ hy)

theorem findSome?_some {α β : Type} {g : α → Option β} {b : β} :
    ∀ {l : List α}, l.findSome? g = some b → ∃ x ∈ l, g x = some b
  | [], h => by cases h
  | x :: xs, h => by
    cases hx : g x with
    | some b' =>
      simp only [List.findSome?, hx, Option.some.injEq] at h
      exact ⟨x, List.mem_cons_self, by rw [hx, h]⟩
    | none =>
      simp only [List.findSome?, hx] at h
      obtain ⟨y, hy, hg⟩ := findSome?_some h
      exact ⟨y, List.mem_cons_of_mem _ hy, hg⟩

/-- The reader finds a role's header by the symbols alone, then reads the body as that role. -/
theorem findSome?_heads (g : Role → List Sym → Option TTurn) :
    ∀ {hs : List (Role × List Part)}, pairwiseB headsApart hs = true →
    ∀ {r : Role} {h : List Part}, findHead hs r = some h → ∀ z,
      hs.findSome? (fun e => (stripPrefix? (partsSyms e.2) (partsSyms h ++ z)).bind (g e.1)) =
        g r z
  | [], _, _, _, hh, _ => by simp [findHead] at hh
  | e :: es, hp, r, h, hh, z => by
    obtain ⟨hx, hp'⟩ := pairwiseB_cons hp
    by_cases hc : roleCode e.1 = roleCode r
    · have he : findHead (e :: es) r = some e.2 := by simp [findHead, List.find?, hc]
      rw [he, Option.some.injEq] at hh
      subst hh
      have hr := roleCode_inj hc
      subst hr
      have rest : es.findSome? (fun e' =>
          (stripPrefix? (partsSyms e'.2) (partsSyms e.2 ++ z)).bind (g e'.1)) = none :=
        findSome?_none fun e' he' => by
          rw [stripPrefix?_clash z (headsApart_spec (hx e' he')).2.2, Option.bind_none]
      cases hg : g e.1 z with
      | some b => simp [List.findSome?, hg]
      | none => simp [List.findSome?, hg, rest]
    · have he : findHead (e :: es) r = findHead es r := by
        simp only [findHead, List.find?, beq_false_of_ne hc]
      rw [he] at hh
      obtain ⟨e', he', _, rfl⟩ := findHead_mem hh
      have hn : stripPrefix? (partsSyms e.2) (partsSyms e'.2 ++ z) = none :=
        stripPrefix?_clash z (headsApart_spec (hx e' he')).2.1
      simp only [List.findSome?, hn, Option.bind_none]
      exact findSome?_heads g hp' hh z

/-! ## Symbols of a layout -/

/-- The symbols of a think block. -/
@[expose] def thinkSyms (f : TaggedFmt) (th : Option LPay) : List Sym :=
  syms (thinkItems f th 0)

/-- The symbols of a payload. -/
@[expose] def paySyms (p : LPay) : List Sym := (pay p 0 false).piece.syms

/-- The symbols after the turns: the generation prompt or what a render without it ends
with. -/
@[expose] def finOf (f : TaggedFmt) : Option Nat → List Sym
  | some _ => promptSyms f
  | none => eosSyms f

theorem syms_parts (o : Nat) (ps : List Part) : syms (ps.map (partItem o)) = partsSyms ps := by
  induction ps with
  | nil => rfl
  | cons x ps ih => cases x <;> simp [partItem, ctl, txt, Piece.syms, partsSyms, Part.syms, ih, lit] <;> rfl

theorem syms_headItems (f : TaggedFmt) (r : Role) (o : Nat) :
    syms (headItems f r o) = partsSyms ((headOf f r).getD []) := syms_parts o _

theorem syms_thinkItems (f : TaggedFmt) (th : Option LPay) (o : Nat) :
    syms (thinkItems f th o) = thinkSyms f th := by
  unfold thinkSyms thinkItems
  cases f.think with
  | none => rfl
  | some ab =>
    cases th with
    | none => rfl
    | some p => cases p <;> rfl

theorem syms_pay (p : LPay) (o : Nat) (l : Bool) : syms [pay p o l] = paySyms p := by
  cases p <;> simp [pay, paySyms]

theorem syms_footItems (f : TaggedFmt) (o : Nat) (l : Bool) :
    syms (footItems f o l) = .ctrl f.endTurn :: lit f.footTail := by
  unfold footItems
  split <;> simp_all [ctl, txt, Piece.syms, lit]

theorem mem_footItems {f : TaggedFmt} {o : Nat} {l : Bool} {it : Item}
    (h : it ∈ footItems f o l) : it = ctl f.endTurn o l ∨ it = txt f.footTail o false := by
  unfold footItems at h
  split at h <;> simp_all

theorem syms_ctls (o : Nat) (l : List Token) :
    syms (l.map fun t => ctl t o false) = l.map .ctrl := by
  induction l with
  | nil => rfl
  | cons t l ih =>
    rw [List.map_cons, syms_cons, ih]
    rfl

theorem syms_promptItems (f : TaggedFmt) (o : Nat) : syms (promptItems f o) = promptSyms f := by
  simp only [promptSyms, promptItems, syms_append, syms_headItems, syms_ctls]

theorem syms_eosItems (f : TaggedFmt) (o : Nat) : syms (eosItems f o) = eosSyms f := by
  unfold eosSyms eosItems
  cases f.eos <;> rfl

theorem syms_turnItems_msg (f : TaggedFmt) (r : Role) (th : Option LPay) (p : LPay) (o : Nat) :
    syms (turnItems f (.msg r th p o)) = partsSyms ((headOf f r).getD []) ++ thinkSyms f th ++
      paySyms p ++ .ctrl f.endTurn :: lit f.footTail := by
  simp only [turnItems, syms_append, syms_headItems, syms_thinkItems, syms_pay, syms_footItems]

theorem syms_turnItems_sampled (f : TaggedFmt) (ts : List Token) (o : Nat) :
    syms (turnItems f (.sampled ts o)) =
      promptSyms f ++ ts.map .tok ++ .ctrl f.endTurn :: lit f.footTail := by
  simp [turnItems, syms_promptItems, syms_footItems, Piece.syms]

theorem syms_layout (f : TaggedFmt) (q : TConv) :
    syms (layout f q) = q.turns.flatMap (fun t => syms (turnItems f t)) ++ finOf f q.prompt := by
  obtain ⟨turns, p⟩ := q
  cases p <;> simp [layout, syms_flatMap, finOf, syms_promptItems, syms_eosItems]

theorem syms_turnItems_erase (f : TaggedFmt) (t : TTurn) :
    syms (turnItems f t.erase) = syms (turnItems f t) := by
  cases t <;> simp only [TTurn.erase, syms_turnItems_msg, syms_turnItems_sampled]

theorem syms_layout_erase (f : TaggedFmt) (l : TConv) :
    syms (layout f l.erase) = syms (layout f l) := by
  obtain ⟨turns, p⟩ := l
  have hp : finOf f (p.map fun _ => 0) = finOf f p := by cases p <;> rfl
  simp only [TConv.erase, syms_layout, List.flatMap_map, syms_turnItems_erase, hp]

/-! ## Where the footer token is not -/

theorem not_ctrl_mem_lit (t : Token) (cs : Chars) : Sym.ctrl t ∉ lit cs := by
  simp [lit]

theorem end_not_mem_head {f : TaggedFmt} (hf : f.wf = true) (r : Role) :
    Sym.ctrl f.endTurn ∉ partsSyms ((headOf f r).getD []) := by
  cases hh : headOf f r with
  | none => simp [partsSyms]
  | some h =>
    obtain ⟨e, he, -, rfl⟩ := findHead_mem hh
    exact wf_end_heads hf e he

theorem end_not_mem_think {f : TaggedFmt} (hf : f.wf = true) (th : Option LPay) :
    Sym.ctrl f.endTurn ∉ thinkSyms f th := by
  have h3 := wf_end_think hf
  unfold thinkToks at h3
  unfold thinkSyms thinkItems
  cases hk : f.think with
  | none => simp
  | some ab =>
    obtain ⟨a, b⟩ := ab
    simp only [hk] at h3
    cases th with
    | none => simp
    | some p => cases p <;> simp_all [pay, ctl, Piece.syms, lit]

theorem end_not_mem_prompt {f : TaggedFmt} (hf : f.wf = true) :
    Sym.ctrl f.endTurn ∉ promptSyms f := by
  simp only [promptSyms, promptItems, syms_append, syms_headItems, syms_ctls, List.mem_append,
    not_or]
  refine ⟨end_not_mem_head hf _, ?_⟩
  intro hm
  obtain ⟨x, hx, hxe⟩ := List.mem_map.mp hm
  cases hxe
  exact wf_end_think hf (List.mem_of_mem_take hx)

theorem end_not_mem_eos {f : TaggedFmt} (hf : f.wf = true) : Sym.ctrl f.endTurn ∉ eosSyms f := by
  have h4 := wf_end_eos hf
  unfold eosSyms eosItems
  cases hk : f.eos with
  | none => simp
  | some e =>
    simp only [hk] at h4
    simp_all [ctl, Piece.syms]

end Verified.Tagged

end
