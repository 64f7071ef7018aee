module

public import Verified.Thm.TaggedRead

public section

/-!
# Tagged turns are lawful

For every entry meeting `TaggedFmt.wf`:

* `lower_fits`: lowering writes only roles with a header, and a think block exactly on the
  assistant turns of an entry with one;
* `unlayout_layout`: a text-only layout of a lowering reads back as that lowering (owners
  erased): the layout split at the footer token gives each turn's chunk (`chunksOf`), and
  each chunk reads back as its turn (`readTurn_chunk`);
* `layout_unlayout`: what `unlayout` returns lays out to its input (`readChunks_sound`);
* `ctrl_reserved_layout`: a layout places only the entry's control tokens, all reserved;
* `lawful`: `Format.Lawful`, hence `parse_render`, `render_parse`, `render_injective` and
  `no_forgery` of `Thm/Format.lean` for every tagged entry.
-/

namespace Verified.Tagged

open Verified

/-! ## What lowering guarantees -/

/-- A message turn's role has a header, and it has a think block exactly when it is an
assistant turn of an entry with one. -/
@[expose] def TTurn.fits (f : TaggedFmt) : TTurn → Prop
  | .msg r th _ _ => (headOf f r).isSome = true ∧ th.isSome = (isAsst r && f.think.isSome)
  | .sampled _ _ => True

theorem lowerBody_fits {f : TaggedFmt} {r : Role} {i : Nat} {bs : List Block} {t : TTurn}
    (hh : (headOf f r).isSome = true) (h : lowerBody f r i bs = some t) : t.fits f := by
  unfold lowerBody at h
  split at h
  · rename_i hc
    split at h
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨hh, by simpa using hc.symm⟩
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨hh, by simpa using hc.symm⟩
  · rename_i hc
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    exact ⟨hh, by cases hb : (isAsst r && f.think.isSome) <;> simp_all⟩

theorem lowerMsg_fits {f : TaggedFmt} {i : Nat} {m : Message} {t : TTurn}
    (h : lowerMsg f i m = some t) : t.fits f := by
  unfold lowerMsg at h
  split at h
  · cases h
  · rename_i hh
    have hh' : (headOf f m.role).isSome = true := by
      cases hx : headOf f m.role <;> simp_all
    obtain ⟨t', ht', hok⟩ := Option.bind_eq_some_iff.mp h
    split at hok
    · cases hok
      unfold lowerTurn at ht'
      split at ht'
      · cases ht'
        trivial
      · exact lowerBody_fits hh' ht'
    · cases hok

theorem lowerMsgs_fits {f : TaggedFmt} : ∀ {i : Nat} {ms : List Message} {ts : List TTurn},
    lowerMsgs f i ms = some ts → ∀ t ∈ ts, t.fits f
  | _, [], ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | i, m :: ms, ts, h => by
    obtain ⟨t0, h0, hr⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp hr
    intro t ht
    rcases List.mem_cons.mp ht with rfl | ht
    · exact lowerMsg_fits h0
    · exact lowerMsgs_fits hts' t ht

/-- Lowering writes only roles with a header, and a think block exactly where the entry
writes one. -/
theorem lower_fits {f : TaggedFmt} {c : Conversation} {l : TConv} (h : lower f c = some l) :
    ∀ t ∈ l.turns, t.fits f := by
  unfold lower at h
  split at h
  · cases h
  · obtain ⟨ts, hts, rfl⟩ := Option.map_eq_some_iff.mp h
    exact lowerMsgs_fits hts

/-! ## Chunks -/

/-- The symbols of a turn before its footer token. -/
@[expose] def chunk (f : TaggedFmt) : TTurn → List Sym
  | .msg r th p _ => partsSyms ((headOf f r).getD []) ++ thinkSyms f th ++ paySyms p
  | .sampled ts _ => promptSyms f ++ ts.map .tok

/-- A layout's parts between footer tokens: the first turn's chunk, then each later chunk
after the footer's text, the generation prompt or `eosSyms` last. -/
@[expose] def chunksOf (f : TaggedFmt) : List TTurn → List Sym → List Sym × List (List Sym)
  | [], fin => (fin, [])
  | t :: ts, fin =>
      (chunk f t, (lit f.footTail ++ (chunksOf f ts fin).1) :: (chunksOf f ts fin).2)

theorem syms_turnItems (f : TaggedFmt) (t : TTurn) :
    syms (turnItems f t) = chunk f t ++ .ctrl f.endTurn :: lit f.footTail := by
  cases t <;> simp only [chunk, syms_turnItems_msg, syms_turnItems_sampled]

theorem chunksOf_join (f : TaggedFmt) (fin : List Sym) : ∀ ts : List TTurn,
    (chunksOf f ts fin).1 ++ (chunksOf f ts fin).2.flatMap (.ctrl f.endTurn :: ·) =
      ts.flatMap (fun t => syms (turnItems f t)) ++ fin
  | [] => by simp [chunksOf]
  | t :: ts => by
    have ih := chunksOf_join f fin ts
    simp only [chunksOf, List.flatMap_cons, List.append_assoc, List.cons_append]
    rw [ih, syms_turnItems]
    simp only [List.append_assoc, List.cons_append]

theorem takeText_lit (cs : Chars) : takeText (lit cs) = (cs, []) := by
  have := takeText_lit_append cs []
  simpa using this

theorem thinkSyms_none (f : TaggedFmt) : thinkSyms f none = [] := by
  unfold thinkSyms thinkItems
  cases f.think <;> rfl

theorem thinkSyms_some {f : TaggedFmt} {a b : Token} (hk : f.think = some (a, b)) (x : Chars) :
    thinkSyms f (some (.text x)) = .ctrl a :: lit x ++ [.ctrl b] := by
  unfold thinkSyms thinkItems
  simp only [hk]
  simp [ctl, pay, Piece.syms, lit]

theorem paySyms_text (x : Chars) : paySyms (.text x) = lit x := rfl

theorem readPlain_lit (r : Role) (th : Option LPay) (x : Chars) :
    readPlain r th (lit x) = some (.msg r th (.text x) 0) := by
  simp [readPlain, takeText_lit]

/-- A fitting message turn with text payloads reads back from its body. -/
theorem readBody_msg {f : TaggedFmt} (r : Role) (th : Option LPay) (x : Chars) (o : Nat)
    (hfit : th.isSome = (isAsst r && f.think.isSome))
    (htext : textOnly (turnItems f (.msg r th (.text x) o)) = true) :
    readBody f r (thinkSyms f th ++ lit x) = some (.msg r th (.text x) 0) := by
  unfold readBody
  cases hk : f.think with
  | none =>
    have hth : th = none := by cases th <;> simp_all
    subst hth
    simp only [thinkSyms_none, List.nil_append, readPlain_lit]
  | some ab =>
    obtain ⟨a, b⟩ := ab
    cases hr : isAsst r with
    | false =>
      have hth : th = none := by cases th <;> simp_all
      subst hth
      simp [thinkSyms_none, readPlain_lit]
    | true =>
      obtain ⟨q, rfl⟩ : ∃ q, th = some q := by cases th <;> simp_all
      cases q with
      | toks ts =>
        simp [textOnly, turnItems, thinkItems, hk, pay, ctl, Piece.isToks] at htext
      | text y =>
        rw [thinkSyms_some hk]
        simp [stripPrefix?, readPlain_lit]

/-- The chunk of a fitting text turn reads back as that turn, and holds no footer token. -/
theorem readTurn_chunk {f : TaggedFmt} (hf : f.wf = true) {t : TTurn} (hfit : t.fits f)
    (htext : textOnly (turnItems f t) = true) :
    readTurn f (chunk f t) = some t.erase ∧ Sym.ctrl f.endTurn ∉ chunk f t := by
  cases t with
  | sampled ts o => simp [textOnly, turnItems, Piece.isToks] at htext
  | msg r th p o =>
    cases p with
    | toks ts => simp [textOnly, turnItems, pay, Piece.isToks] at htext
    | text x =>
      obtain ⟨hh, hth⟩ := hfit
      obtain ⟨h, hh'⟩ : ∃ h, headOf f r = some h := Option.isSome_iff_exists.mp hh
      refine ⟨?_, ?_⟩
      · have e := findSome?_heads (readBody f) (wf_heads hf) (h := h) hh'
          (thinkSyms f th ++ lit x)
        simp only [readTurn, chunk, hh', Option.getD_some, paySyms_text, List.append_assoc]
        rw [e, readBody_msg r th x o hth htext]
        rfl
      · simp only [chunk, hh', Option.getD_some, paySyms_text, List.mem_append, not_or]
        obtain ⟨e, he, -, rfl⟩ := findHead_mem hh'
        exact ⟨⟨wf_end_heads hf e he, end_not_mem_think hf th⟩, not_ctrl_mem_lit _ _⟩

theorem readFin_fin {f : TaggedFmt} (hf : f.wf = true) (p : Option Nat) :
    readFin f (finOf f p) = some (p.map fun _ => 0) := by
  cases p with
  | some o => simp [readFin, finOf]
  | none =>
    have hne : eosSyms f ≠ promptSyms f := fun e => wf_fin hf e.symm
    simp [readFin, finOf, hne]

theorem end_not_mem_fin {f : TaggedFmt} (hf : f.wf = true) (p : Option Nat) :
    Sym.ctrl f.endTurn ∉ finOf f p := by
  cases p with
  | some _ => exact end_not_mem_prompt hf
  | none => exact end_not_mem_eos hf

/-- The chunks of fitting text turns read back as the turns, and hold no footer token. -/
theorem readChunks_chunksOf {f : TaggedFmt} (hf : f.wf = true) (p : Option Nat) :
    ∀ ts : List TTurn, (∀ t ∈ ts, t.fits f ∧ textOnly (turnItems f t) = true) →
      readChunks f (chunksOf f ts (finOf f p)).1 (chunksOf f ts (finOf f p)).2 =
          some ⟨ts.map TTurn.erase, p.map fun _ => 0⟩ ∧
        Sym.ctrl f.endTurn ∉ (chunksOf f ts (finOf f p)).1 ∧
        ∀ c ∈ (chunksOf f ts (finOf f p)).2, Sym.ctrl f.endTurn ∉ c
  | [], _ => by
    refine ⟨?_, end_not_mem_fin hf p, fun c hc => by cases hc⟩
    simp only [chunksOf, readChunks, readFin_fin hf p, Option.map_some, List.map_nil]
  | t :: ts, h => by
    obtain ⟨hfit, htext⟩ := h t List.mem_cons_self
    obtain ⟨hr, hc⟩ := readTurn_chunk hf hfit htext
    obtain ⟨ih1, ih2, ih3⟩ := readChunks_chunksOf hf p ts fun t' ht' =>
      h t' (List.mem_cons_of_mem _ ht')
    refine ⟨?_, hc, ?_⟩
    · simp only [chunksOf, readChunks, hr, Option.bind_some, stripPrefix?_append, ih1,
        Option.map_some, List.map_cons]
    · intro c hc'
      rcases List.mem_cons.mp hc' with rfl | hc'
      · simp only [List.mem_append, not_or]
        exact ⟨not_ctrl_mem_lit _ _, ih2⟩
      · exact ih3 c hc'

theorem textOnly_turn {f : TaggedFmt} {l : TConv} (h : textOnly (layout f l) = true) :
    ∀ t ∈ l.turns, textOnly (turnItems f t) = true := by
  intro t ht
  simp only [textOnly, List.all_eq_true] at h ⊢
  intro i hi
  apply h
  unfold layout
  exact List.mem_append_left _ (List.mem_flatMap.mpr ⟨t, ht, hi⟩)

/-- `unlayout` inverts `layout` (owners erased) on a text-only layout of fitting turns. -/
theorem unlayout_layout {f : TaggedFmt} (hf : f.wf = true) (l : TConv)
    (hfit : ∀ t ∈ l.turns, t.fits f) (ht : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  obtain ⟨turns, p⟩ := l
  obtain ⟨h1, h2, h3⟩ := readChunks_chunksOf hf p turns fun t ht' =>
    ⟨hfit t ht', textOnly_turn ht t ht'⟩
  rw [syms_layout, ← chunksOf_join]
  simp only [unlayout, splitAtCtrl_chunks _ _ _ h2 h3]
  exact h1

/-! ## Soundness of the reader -/

theorem readPlain_sound {r : Role} {th : Option LPay} {s : List Sym} {t : TTurn}
    (h : readPlain r th s = some t) : ∃ x, t = .msg r th (.text x) 0 ∧ s = lit x := by
  unfold readPlain at h
  dsimp only at h
  split at h
  · rename_i h2
    cases h
    refine ⟨_, rfl, ?_⟩
    have := takeText_spec s
    rw [h2, List.append_nil] at this
    exact this.symm
  · cases h

theorem readBody_sound {f : TaggedFmt} {r : Role} {s : List Sym} {t : TTurn}
    (h : readBody f r s = some t) :
    ∃ th p, t = .msg r th p 0 ∧ thinkSyms f th ++ paySyms p = s := by
  unfold readBody at h
  cases hk : f.think with
  | none =>
    simp only [hk] at h
    obtain ⟨x, rfl, rfl⟩ := readPlain_sound h
    exact ⟨none, .text x, rfl, by simp [thinkSyms_none, paySyms_text]⟩
  | some ab =>
    obtain ⟨a, b⟩ := ab
    simp only [hk] at h
    split at h
    · obtain ⟨s1, hs1, h'⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨s2, hs2, h''⟩ := Option.bind_eq_some_iff.mp h'
      obtain ⟨y, rfl, rfl⟩ := readPlain_sound h''
      refine ⟨_, _, rfl, ?_⟩
      have e1 := stripPrefix?_eq_some hs1
      have e2 := stripPrefix?_eq_some hs2
      have e3 := takeText_spec s1
      rw [e2] at e3
      rw [thinkSyms_some hk, paySyms_text, e1, ← e3]
      simp
    · obtain ⟨x, rfl, rfl⟩ := readPlain_sound h
      exact ⟨none, .text x, rfl, by simp [thinkSyms_none, paySyms_text]⟩

/-- A chunk the reader accepts is the chunk of what it returns. -/
theorem readTurn_sound {f : TaggedFmt} (hf : f.wf = true) {a : List Sym} {t : TTurn}
    (h : readTurn f a = some t) :
    syms (turnItems f t) = a ++ .ctrl f.endTurn :: lit f.footTail := by
  obtain ⟨e, he, hr⟩ := findSome?_some h
  obtain ⟨rest, hrest, hb⟩ := Option.bind_eq_some_iff.mp hr
  obtain ⟨th, p, rfl, hs⟩ := readBody_sound hb
  have hh : headOf f e.1 = some e.2 := findHead_of_mem (wf_heads hf) he
  rw [syms_turnItems_msg, hh, Option.getD_some, stripPrefix?_eq_some hrest, ← hs]
  simp only [List.append_assoc]

theorem readChunks_sound {f : TaggedFmt} (hf : f.wf = true) :
    ∀ (cs : List (List Sym)) (a : List Sym) (l : TConv), readChunks f a cs = some l →
      syms (layout f l) = a ++ cs.flatMap (.ctrl f.endTurn :: ·)
  | [], a, l, h => by
    obtain ⟨p, hp, rfl⟩ := Option.map_eq_some_iff.mp h
    unfold readFin at hp
    split at hp
    · rename_i ha
      cases hp
      simp [syms_layout, finOf, ha]
    · split at hp
      · rename_i ha
        cases hp
        simp [syms_layout, finOf, ha]
      · cases hp
  | c :: cs, a, l, h => by
    obtain ⟨t, ht, h1⟩ := Option.bind_eq_some_iff.mp h
    obtain ⟨c', hc', h2⟩ := Option.bind_eq_some_iff.mp h1
    obtain ⟨q, hq, rfl⟩ := Option.map_eq_some_iff.mp h2
    have ih := readChunks_sound hf cs c' q hq
    have e := readTurn_sound hf ht
    rw [syms_layout] at ih ⊢
    rw [List.flatMap_cons, e, List.append_assoc, ih, stripPrefix?_eq_some hc']
    simp only [List.flatMap_cons, List.append_assoc, List.cons_append]

/-- What `unlayout` returns lays out to its input. -/
theorem layout_unlayout {f : TaggedFmt} (hf : f.wf = true) (s : List Sym) (l : TConv)
    (h : unlayout f s = some l) : syms (layout f l) = s := by
  unfold unlayout at h
  rw [readChunks_sound hf _ _ _ h, splitAtCtrl_join]

/-! ## Control tokens -/

theorem ctrl_mem_parts {t : Token} : ∀ {ps : List Part}, Sym.ctrl t ∈ partsSyms ps →
    t ∈ partsCtrls ps
  | [], h => by simp [partsSyms] at h
  | x :: ps, h => by
    have h' : Sym.ctrl t ∈ x.syms ∨ Sym.ctrl t ∈ partsSyms ps := by simpa [partsSyms] using h
    rcases h' with h' | h'
    · cases x with
      | ctrl u =>
        simp only [Part.syms, List.mem_singleton, Sym.ctrl.injEq] at h'
        subst h'
        simp [partsCtrls]
      | text cs => exact absurd h' (not_ctrl_mem_lit _ _)
    · have := ctrl_mem_parts h'
      simp only [partsCtrls, List.flatMap_cons, List.mem_append]
      exact Or.inr this

theorem ctrl_mem_head {f : TaggedFmt} {r : Role} {t : Token}
    (h : Sym.ctrl t ∈ partsSyms ((headOf f r).getD [])) : t ∈ ctrlToks f := by
  cases hh : headOf f r with
  | none => simp [hh, partsSyms] at h
  | some x =>
    rw [hh, Option.getD_some] at h
    obtain ⟨e, he, -, rfl⟩ := findHead_mem hh
    unfold ctrlToks
    exact List.mem_append_left _
      (List.mem_append_left _ (List.mem_flatMap.mpr ⟨e, he, ctrl_mem_parts h⟩))

theorem mem_ctrlToks_think {f : TaggedFmt} {t : Token} (h : t ∈ thinkToks f) :
    t ∈ ctrlToks f := by
  simp [ctrlToks, h]

theorem ctrl_mem_think {f : TaggedFmt} {th : Option LPay} {t : Token}
    (h : Sym.ctrl t ∈ thinkSyms f th) : t ∈ ctrlToks f := by
  apply mem_ctrlToks_think
  unfold thinkSyms thinkItems at h
  unfold thinkToks
  cases hk : f.think with
  | none => simp [hk] at h
  | some ab =>
    obtain ⟨a, b⟩ := ab
    simp only [hk] at h
    cases th with
    | none => simp at h
    | some p => cases p <;> simp_all [pay, ctl, Piece.syms, lit]

theorem ctrl_mem_prompt {f : TaggedFmt} {t : Token} (h : Sym.ctrl t ∈ promptSyms f) :
    t ∈ ctrlToks f := by
  simp only [promptSyms, promptItems, syms_append, syms_headItems, syms_ctls,
    List.mem_append] at h
  rcases h with h | h
  · exact ctrl_mem_head h
  · obtain ⟨x, hx, hxe⟩ := List.mem_map.mp h
    cases hxe
    exact mem_ctrlToks_think (List.mem_of_mem_take hx)

theorem ctrl_mem_eos {f : TaggedFmt} {t : Token} (h : Sym.ctrl t ∈ eosSyms f) :
    t ∈ ctrlToks f := by
  unfold eosSyms eosItems at h
  cases hk : f.eos with
  | none => simp [hk] at h
  | some e =>
    simp only [hk] at h
    simp_all [ctrlToks, ctl, Piece.syms]

theorem ctrl_mem_layout {f : TaggedFmt} {l : TConv} {t : Token}
    (h : Sym.ctrl t ∈ syms (layout f l)) : t ∈ ctrlToks f := by
  rw [syms_layout, List.mem_append, List.mem_flatMap] at h
  rcases h with ⟨u, -, hu⟩ | h
  · cases u with
    | msg r th p o =>
      rw [syms_turnItems_msg] at hu
      simp only [List.mem_append, List.mem_cons] at hu
      rcases hu with ((hu | hu) | hu) | hu | hu
      · exact ctrl_mem_head hu
      · exact ctrl_mem_think hu
      · cases p <;> simp [paySyms, pay, Piece.syms] at hu
      · cases hu
        simp [ctrlToks]
      · exact absurd hu (not_ctrl_mem_lit _ _)
    | sampled ts o =>
      rw [syms_turnItems_sampled] at hu
      simp only [List.mem_append, List.mem_cons] at hu
      rcases hu with (hu | hu) | hu | hu
      · exact ctrl_mem_prompt hu
      · simp at hu
      · cases hu
        simp [ctrlToks]
      · exact absurd hu (not_ctrl_mem_lit _ _)
  · cases hp : l.prompt with
    | some _ =>
      rw [hp] at h
      exact ctrl_mem_prompt h
    | none =>
      rw [hp] at h
      exact ctrl_mem_eos h

/-- A layout places only reserved control tokens. -/
theorem ctrl_reserved_layout {f : TaggedFmt} (hf : f.wf = true) (l : TConv) :
    ∀ t ∈ ctrls (syms (layout f l)), isReserved f.reserved t = true := by
  intro t ht
  simp only [ctrls, List.mem_filterMap] at ht
  obtain ⟨x, hx, hxt⟩ := ht
  cases x with
  | ctrl t' =>
    simp only [Option.some.injEq] at hxt
    subst hxt
    simpa [isReserved] using wf_reserved hf _ (ctrl_mem_layout hx)
  | ch _ => simp at hxt
  | tok _ => simp at hxt

/-! ## Lawful -/

/-- Every tagged entry meeting `wf` is lawful: its renders parse back (up to owners), parsing
is sound and injective, and no text forges a control token. -/
theorem lawful (f : TaggedFmt) (hf : f.wf = true) : (format f).Lawful :=
  ⟨fun _ l hl ht => unlayout_layout hf l (lower_fits hl) ht, layout_unlayout hf,
    ctrl_reserved_layout hf, syms_layout_erase f⟩

end Verified.Tagged

end
