module

public import Verified.Spec.Span
public import Verified.Thm.Token
public import Verified.Thm.Sym

public section

/-!
# Span encoding and decoding

* `ids_encodeItems`: the ids of a render depend only on the symbol stream of the layout.
* `decodeSyms_encodeSyms`: with a lawful codec, reading a render back gives its symbol stream
  (every control symbol reserved, no verbatim tokens).
* `encodeSyms_of_decodeSyms`: `decodeSyms` never invents a stream: what it returns encodes to
  its input.
* `reserved_of_encodeSyms`: the reserved tokens of a render are exactly its control symbols,
  in order: text never produces a control token.
-/

namespace Verified

/-! ## Helpers -/

/-- `assign` keeps the tokens it is given. -/
theorem ids_assign (bytes : Token → List UInt8) (ts : List Token) (ms : List Ann) (d : Ann) :
    ids (assign bytes ts ms d) = ts := by
  induction ts generalizing ms with
  | nil => rfl
  | cons t ts ih => exact congrArg (t :: ·) (ih (ms.drop (bytes t).length))

/-- The token ids of the cells of one annotated span. -/
theorem map_tok_encodeRunCells (c : Codec) (run : List (Sym × Ann)) :
    (encodeRunCells c run).map Cell.tok = c.encodeRun (chars (run.map Prod.fst)) :=
  ids_assign _ _ _ _

/-- Forgetting the annotations of `asyms` gives `syms`. -/
theorem asyms_map_fst (items : List Item) : (asyms items).map Prod.fst = syms items := by
  induction items <;> simp_all [asyms, syms, Function.comp_def]

/-- Text never encodes to a reserved token. -/
theorem Codec.encodeRun_not_reserved {c : Codec} {res : List Token} (hc : c.Lawful res)
    (cs : Chars) : ∀ t ∈ c.encodeRun cs, isReserved res t = false := by
  unfold Codec.encodeRun
  split
  · intro t ht
    cases ht
  · exact hc.not_reserved cs

/-- The reserved tokens of an encoded span: none. -/
theorem Codec.filter_encodeRun {c : Codec} {res : List Token} (hc : c.Lawful res) (cs : Chars) :
    (c.encodeRun cs).filter (isReserved res) = [] :=
  List.filter_eq_nil_iff.mpr fun t ht => by simp [Codec.encodeRun_not_reserved hc cs t ht]

/-- A lawful codec reads an encoded span back. -/
theorem Codec.decodeRun_encodeRun {c : Codec} {res : List Token} (hc : c.Lawful res)
    (cs : Chars) : c.decodeRun (c.encodeRun cs) = some (lit cs) := by
  cases cs with
  | nil => rfl
  | cons x xs =>
    have hne : c.encode (x :: xs) ≠ [] := hc.encode_ne_nil (List.cons_ne_nil _ _)
    have he : c.encodeRun (x :: xs) = c.encode (x :: xs) := rfl
    simp [Codec.decodeRun, he, hne, hc.decode_encode, utf8Decode_utf8]

/-- What `decodeRun` returns is text that encodes to its input. -/
theorem Codec.decodeRun_eq_some {c : Codec} {u : List Token} {x : List Sym}
    (h : c.decodeRun u = some x) : ∃ cs, x = lit cs ∧ c.encodeRun cs = u := by
  unfold Codec.decodeRun at h
  split at h
  · rename_i hu
    obtain rfl : u = [] := List.isEmpty_iff.mp hu
    cases h
    exact ⟨[], rfl, rfl⟩
  · split at h
    · cases h
    · rename_i cs _
      split at h
      · rename_i he
        cases h
        exact ⟨cs, rfl, beq_iff_eq.mp he⟩
      · cases h

/-- The characters of a stream of characters spell it. -/
theorem lit_chars_of_isCh (l : List Sym) (h : ∀ x ∈ l, x.isCh = true) : lit (chars l) = l := by
  induction l with
  | nil => rfl
  | cons x l ih =>
    cases x with
    | ch c => exact congrArg (Sym.ch c :: ·) (ih (fun y hy => h y (List.mem_cons_of_mem _ hy)))
    | ctrl t => exact absurd (h _ List.mem_cons_self) (by simp [Sym.isCh])
    | tok t => exact absurd (h _ List.mem_cons_self) (by simp [Sym.isCh])

/-- A stream of characters has no control tokens. -/
theorem ctrls_of_isCh (l : List Sym) (h : ∀ x ∈ l, x.isCh = true) : ctrls l = [] := by
  rw [← lit_chars_of_isCh l h, ctrls_lit]

/-- Every symbol of text is a character. -/
theorem not_isCh_lit (cs : Chars) : ∀ x ∈ lit cs, (fun x : Sym => !x.isCh) x = false := by
  intro x hx
  simp only [lit, List.mem_map] at hx
  obtain ⟨c, -, rfl⟩ := hx
  rfl

/-- The first run of the span split is characters. -/
theorem splitBy_isCh_fst (s : List Sym) :
    ∀ x ∈ (splitBy (fun x => !x.isCh) s).1, x.isCh = true := by
  intro x hx
  simpa using splitBy_fst_false _ s x hx

/-- With every control symbol reserved and no verbatim token, the separators of the span split
are reserved control symbols and the runs after them are characters. -/
theorem splitBy_isCh_snd {res : List Token} (s : List Sym)
    (hctrl : ∀ t ∈ ctrls s, isReserved res t = true) (htext : s.all (fun x => !x.isTok) = true) :
    ∀ y ∈ (splitBy (fun x => !x.isCh) s).2,
      (∃ t, y.1 = .ctrl t ∧ isReserved res t = true) ∧ ∀ z ∈ y.2, z.isCh = true := by
  intro ⟨x, run⟩ hy
  obtain ⟨h1, h2⟩ := splitBy_snd _ s _ hy
  have hmem : x ∈ s := splitBy_snd_mem _ s _ hy
  refine ⟨?_, fun z hz => by simpa using h2 z hz⟩
  cases x with
  | ctrl t =>
    refine ⟨t, rfl, hctrl t ?_⟩
    simp only [ctrls, List.mem_filterMap]
    exact ⟨_, hmem, rfl⟩
  | ch ch => simp [Sym.isCh] at h1
  | tok t =>
    have := List.all_eq_true.mp htext _ hmem
    simp [Sym.isTok] at this

/-- Decoding the runs after the separators of a render. -/
theorem mapM_decodeRun {c : Codec} {res : List Token} (hc : c.Lawful res)
    (ys : List (Sym × List Sym))
    (h : ∀ y ∈ ys, (∃ t, y.1 = .ctrl t ∧ isReserved res t = true) ∧ ∀ z ∈ y.2, z.isCh = true) :
    (ys.map fun x => (x.1.token, c.encodeRun (chars x.2))).mapM
      (fun x => (c.decodeRun x.2).map (Sym.ctrl x.1 :: ·)) = some (ys.map fun x => x.1 :: x.2) := by
  induction ys with
  | nil => rfl
  | cons y ys ih =>
    obtain ⟨x, run⟩ := y
    obtain ⟨⟨t, ht, -⟩, hr⟩ := h (x, run) List.mem_cons_self
    have ht' : x = .ctrl t := ht
    have hr' : ∀ z ∈ run, z.isCh = true := hr
    subst ht'
    have ih' := ih (fun z hz => h z (List.mem_cons_of_mem _ hz))
    simp only [List.map_cons, List.mapM_cons, ih']
    simp [Codec.decodeRun_encodeRun hc, lit_chars_of_isCh run hr', Sym.token]

/-- The reserved tokens of the runs after the separators of a render. -/
theorem filter_flatMap_encodeRun {c : Codec} {res : List Token} (hc : c.Lawful res)
    (ys : List (Sym × List Sym))
    (h : ∀ y ∈ ys, (∃ t, y.1 = .ctrl t ∧ isReserved res t = true) ∧ ∀ z ∈ y.2, z.isCh = true) :
    (ys.flatMap fun x => x.1.token :: c.encodeRun (chars x.2)).filter (isReserved res) =
      ctrls (ys.flatMap fun x => x.1 :: x.2) := by
  induction ys with
  | nil => rfl
  | cons y ys ih =>
    obtain ⟨x, run⟩ := y
    obtain ⟨⟨t, ht, htr⟩, hr⟩ := h (x, run) List.mem_cons_self
    have ht' : x = .ctrl t := ht
    have hr' : ∀ z ∈ run, z.isCh = true := hr
    subst ht'
    have ih' := ih (fun z hz => h z (List.mem_cons_of_mem _ hz))
    have hc1 : ctrls (Sym.ctrl t :: run) = t :: ctrls run := rfl
    have ht1 : (Sym.ctrl t).token = t := rfl
    simp only [List.flatMap_cons, List.filter_append, List.filter_cons, ctrls_append, ih',
      Codec.filter_encodeRun hc, ctrls_of_isCh run hr', ht1, htr, hc1, ↓reduceIte]

/-- `encodeSyms` of text. -/
theorem encodeSyms_lit (c : Codec) (cs : Chars) : encodeSyms c (lit cs) = c.encodeRun cs := by
  simp only [encodeSyms, splitBy_of_false _ (lit cs) (not_isCh_lit cs), chars_lit,
    List.flatMap_nil, List.append_nil]

/-- `encodeSyms` of text followed by a symbol that is not a character. -/
theorem encodeSyms_lit_append_cons (c : Codec) (cs : Chars) (x : Sym) (s : List Sym)
    (hx : x.isCh = false) :
    encodeSyms c (lit cs ++ x :: s) = c.encodeRun cs ++ x.token :: encodeSyms c s := by
  simp only [encodeSyms, splitBy_append_of_false _ (lit cs) _ (not_isCh_lit cs),
    splitBy_cons_of_true (fun x => !x.isCh) x s (by simp [hx]), chars_lit, List.append_nil,
    List.flatMap_cons, List.cons_append]

/-- Re-encoding what `decodeSyms` reads after the first run gives back the tokens. -/
theorem encodeSyms_decoded (c : Codec) (ys : List (Token × List Token)) :
    ∀ (cs : Chars) (bs : List (List Sym)),
      ys.mapM (fun x => (c.decodeRun x.2).map (Sym.ctrl x.1 :: ·)) = some bs →
      encodeSyms c (lit cs ++ bs.flatten) = c.encodeRun cs ++ ys.flatMap (fun x => x.1 :: x.2) := by
  induction ys with
  | nil =>
    intro cs bs h
    rw [List.mapM_nil] at h
    cases h
    simp [encodeSyms_lit]
  | cons y ys ih =>
    intro cs bs h
    cases hd : c.decodeRun y.2 with
    | none =>
      simp only [List.mapM_cons, hd] at h
      cases h
    | some v =>
      cases hm : ys.mapM (fun x => (c.decodeRun x.2).map (Sym.ctrl x.1 :: ·)) with
      | none =>
        simp only [List.mapM_cons, hd, hm] at h
        cases h
      | some bs' =>
        simp only [List.mapM_cons, hd, hm] at h
        cases h
        obtain ⟨cs', rfl, he⟩ := Codec.decodeRun_eq_some hd
        rw [List.flatten_cons, List.cons_append, encodeSyms_lit_append_cons c cs _ _ rfl,
          ih cs' bs' hm, he]
        simp [Sym.token]

theorem ids_encodeItems (c : Codec) (items : List Item) :
    ids (encodeItems c items) = encodeSyms c (syms items) := by
  rw [← asyms_map_fst]
  simp [ids, encodeItems, encodeSyms, splitBy_map, map_tok_encodeRunCells, List.map_flatMap,
    List.flatMap_map]

theorem decodeSyms_encodeSyms {c : Codec} {res : List Token} (hc : c.Lawful res) (s : List Sym)
    (hctrl : ∀ t ∈ ctrls s, isReserved res t = true) (htext : s.all (fun x => !x.isTok) = true) :
    decodeSyms c res (encodeSyms c s) = some s := by
  have h1 := splitBy_isCh_fst s
  have h2 := splitBy_isCh_snd s hctrl htext
  have hj := joinBy_splitBy (fun x => !x.isCh) s
  simp only [encodeSyms]
  generalize splitBy (fun x => !x.isCh) s = r at h1 h2 hj ⊢
  subst hj
  obtain ⟨a, ys⟩ := r
  have hA : ∀ z ∈ c.encodeRun (chars a), isReserved res z = false :=
    Codec.encodeRun_not_reserved hc _
  have hY : ∀ y ∈ ys.map (fun x => (x.1.token, c.encodeRun (chars x.2))),
      isReserved res y.1 = true ∧ ∀ z ∈ y.2, isReserved res z = false := by
    intro y hy
    obtain ⟨x, hx, rfl⟩ := List.mem_map.mp hy
    obtain ⟨⟨t, ht, htr⟩, -⟩ := h2 x hx
    refine ⟨?_, Codec.encodeRun_not_reserved hc _⟩
    show isReserved res x.1.token = true
    rw [ht]
    exact htr
  have hjoin : c.encodeRun (chars a) ++ ys.flatMap (fun x => x.1.token :: c.encodeRun (chars x.2)) =
      joinBy (c.encodeRun (chars a), ys.map fun x => (x.1.token, c.encodeRun (chars x.2))) := by
    simp only [joinBy, List.flatMap_map]
  rw [hjoin]
  simp only [decodeSyms, splitBy_joinBy _ _ _ hA hY, Codec.decodeRun_encodeRun hc,
    lit_chars_of_isCh a h1, mapM_decodeRun hc ys h2]
  simp [joinBy, List.flatMap]

theorem encodeSyms_of_decodeSyms {c : Codec} {res ts : List Token} {s : List Sym}
    (h : decodeSyms c res ts = some s) : encodeSyms c s = ts := by
  simp only [decodeSyms] at h
  split at h
  · rename_i a bs ha hbs
    cases h
    obtain ⟨cs, rfl, he⟩ := Codec.decodeRun_eq_some ha
    rw [encodeSyms_decoded c _ cs bs hbs, he]
    exact joinBy_splitBy (isReserved res) ts
  · cases h

theorem reserved_of_encodeSyms {c : Codec} {res : List Token} (hc : c.Lawful res) (s : List Sym)
    (hctrl : ∀ t ∈ ctrls s, isReserved res t = true) (htext : s.all (fun x => !x.isTok) = true) :
    (encodeSyms c s).filter (isReserved res) = ctrls s := by
  have h1 := splitBy_isCh_fst s
  have h2 := splitBy_isCh_snd s hctrl htext
  have hj := joinBy_splitBy (fun x => !x.isCh) s
  simp only [encodeSyms]
  generalize splitBy (fun x => !x.isCh) s = r at h1 h2 hj ⊢
  subst hj
  obtain ⟨a, ys⟩ := r
  simp only [joinBy, List.filter_append, ctrls_append, Codec.filter_encodeRun hc,
    ctrls_of_isCh a h1, List.nil_append, filter_flatMap_encodeRun hc ys h2]

/-! ## Splitting a render, annotations of cells -/

/-- `splitBy` of a list followed by one whose first run is empty: the runs concatenate. -/
theorem splitBy_append_of_fst_nil {α : Type} (p : α → Bool) (l m : List α)
    (h : (splitBy p m).1 = []) :
    splitBy p (l ++ m) = ((splitBy p l).1, (splitBy p l).2 ++ (splitBy p m).2) := by
  induction l with
  | nil => exact Prod.ext h (List.nil_append _).symm
  | cons x l ih => cases hp : p x <;> simp [splitBy, hp, ih]

/-- `asyms` distributes over `++`. -/
theorem asyms_append (a b : List Item) : asyms (a ++ b) = asyms a ++ asyms b := by
  simp [asyms, List.flatMap_append]

/-- `asyms` of a cons. -/
theorem asyms_cons (i : Item) (is : List Item) :
    asyms (i :: is) = i.piece.syms.map (fun s => (s, i.ann)) ++ asyms is := by
  simp [asyms]

/-- The cells of an empty run: none. -/
theorem encodeRunCells_nil (c : Codec) : encodeRunCells c [] = [] := by
  simp [encodeRunCells, Codec.encodeRun, chars, assign]

/-- A layout whose symbols start with a non-character has an empty first run. -/
theorem splitBy_asyms_fst_nil (b : List Item) (h : ∀ x ∈ (syms b).head?, x.isCh = false) :
    (splitBy (fun x : Sym × Ann => !x.1.isCh) (asyms b)).1 = [] := by
  have hm := asyms_map_fst b
  cases hb : asyms b with
  | nil => rfl
  | cons y ys =>
    rw [hb] at hm
    have hy : y.1.isCh = false := h y.1 (by rw [← hm]; rfl)
    rw [splitBy_cons_of_true _ y ys (by simp [hy])]

/-- Every annotated symbol comes from an item. -/
theorem mem_asyms {items : List Item} {z : Sym × Ann} (hz : z ∈ asyms items) :
    ∃ i ∈ items, z.1 ∈ i.piece.syms ∧ z.2 = i.ann := by
  simp only [asyms, List.mem_flatMap, List.mem_map] at hz
  obtain ⟨i, hi, s, hs, rfl⟩ := hz
  exact ⟨i, hi, hs, rfl⟩

/-- The elements of the first run of `splitBy` are elements of the list. -/
theorem mem_of_mem_splitBy_fst {α : Type} (p : α → Bool) (l : List α) {z : α}
    (hz : z ∈ (splitBy p l).1) : z ∈ l := by
  have hj : z ∈ joinBy (splitBy p l) := by
    simp only [joinBy]
    exact List.mem_append_left _ hz
  rwa [joinBy_splitBy] at hj

/-- The elements of the runs after the separators of `splitBy` are elements of the list. -/
theorem mem_of_mem_splitBy_snd {α : Type} (p : α → Bool) (l : List α) {y : α × List α}
    (hy : y ∈ (splitBy p l).2) : ∀ z ∈ y.2, z ∈ l := by
  intro z hz
  have hj : z ∈ joinBy (splitBy p l) := by
    simp only [joinBy]
    exact List.mem_append_right _ (List.mem_flatMap.mpr ⟨y, hy, List.mem_cons_of_mem _ hz⟩)
  rwa [joinBy_splitBy] at hj

/-- The separators of `splitBy`, in order, are the elements satisfying the predicate. -/
theorem map_fst_splitBy_snd {α : Type} (p : α → Bool) (l : List α) :
    (splitBy p l).2.map Prod.fst = l.filter p := by
  induction l with
  | nil => rfl
  | cons x l ih => cases hp : p x <;> simp [splitBy, hp, ih]

/-- Every cell of `assign` takes an annotation of the list or the default. -/
theorem mem_assign {bytes : Token → List UInt8} {ts : List Token} {ms : List Ann} {d : Ann} :
    ∀ x ∈ assign bytes ts ms d, ∃ a, (a ∈ ms ∨ a = d) ∧ x.owner = a.owner ∧ x.loss = a.learn := by
  induction ts generalizing ms with
  | nil => intro x hx; cases hx
  | cons t ts ih =>
    intro x hx
    simp only [assign, List.mem_cons] at hx
    rcases hx with rfl | hx
    · refine ⟨ms.headD d, ?_, rfl, rfl⟩
      cases ms with
      | nil => exact Or.inr rfl
      | cons m ms => exact Or.inl List.mem_cons_self
    · obtain ⟨a, ha, h1, h2⟩ := ih x hx
      exact ⟨a, ha.imp_left List.mem_of_mem_drop, h1, h2⟩

/-- Every cell of an annotated run carries the annotation of one of its symbols. -/
theorem mem_encodeRunCells {c : Codec} {run : List (Sym × Ann)} {Q : Ann → Prop}
    (h : ∀ z ∈ run, Q z.2) :
    ∀ x ∈ encodeRunCells c run, ∃ a, Q a ∧ x.owner = a.owner ∧ x.loss = a.learn := by
  intro x hx
  cases run with
  | nil =>
    rw [encodeRunCells_nil] at hx
    cases hx
  | cons z zs =>
    obtain ⟨a, ha, h1, h2⟩ := mem_assign x hx
    refine ⟨a, ?_, h1, h2⟩
    rcases ha with ha | rfl
    · simp only [byteAnns, List.mem_flatMap, List.mem_map] at ha
      obtain ⟨y, hy, _, _, rfl⟩ := ha
      exact h y hy
    · simp only [List.getLast?_eq_some_getLast (List.cons_ne_nil z zs), Option.map_some,
        Option.getD_some]
      exact h _ (List.getLast_mem _)

/-- A run of unlearned symbols has no learned cell. -/
theorem filter_loss_encodeRunCells {c : Codec} {run : List (Sym × Ann)}
    (h : ∀ z ∈ run, z.2.learn = false) : (encodeRunCells c run).filter (·.loss) = [] :=
  List.filter_eq_nil_iff.mpr fun x hx => by
    obtain ⟨a, ha, -, h2⟩ := mem_encodeRunCells (Q := fun a => a.learn = false) h x hx
    simp [h2, ha]

/-- The learned cells of the separators and runs of a render whose runs are unlearned. -/
theorem learned_flatMap (c : Codec) (ys : List ((Sym × Ann) × List (Sym × Ann)))
    (h : ∀ y ∈ ys, ∀ z ∈ y.2, z.2.learn = false) :
    ((ys.flatMap fun x => (⟨x.1.1.token, x.1.1.src, x.1.2.owner, x.1.2.learn⟩ : Cell) ::
        encodeRunCells c x.2).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      ((ys.map Prod.fst).filter (·.2.learn)).map (fun x => (x.1.token, x.2.owner)) := by
  induction ys with
  | nil => rfl
  | cons y ys ih =>
    have hy := filter_loss_encodeRunCells (c := c) (h y List.mem_cons_self)
    have ih' := ih (fun y' hy' => h y' (List.mem_cons_of_mem _ hy'))
    simp only [List.flatMap_cons, List.filter_append, List.map_append, ih', List.filter_cons,
      hy, List.map_cons]
    cases y.1.2.learn <;> simp

/-- Filtering with the constant `true` keeps everything. -/
theorem filter_fun_true {α : Type} (l : List α) : l.filter (fun _ => true) = l := by
  induction l with
  | nil => rfl
  | cons x l ih => exact congrArg (x :: ·) ih

/-- The learned non-character symbols of a layout, item by item. -/
theorem learned_asyms (items : List Item) :
    (((asyms items).filter (fun x => !x.1.isCh)).filter (·.2.learn)).map
        (fun x => (x.1.token, x.2.owner)) =
      items.flatMap (fun i => if i.ann.learn then
        (match i.piece with
          | .ctrl t => [(t, i.ann.owner)]
          | .toks ts => ts.map (·, i.ann.owner)
          | .text _ => [])
        else []) := by
  induction items with
  | nil => rfl
  | cons i is ih =>
    rw [asyms_cons, List.filter_append, List.filter_append, List.map_append, ih,
      List.flatMap_cons]
    obtain ⟨piece, o, l⟩ := i
    congr 1
    cases piece <;> cases l <;>
      simp [Piece.syms, Sym.isCh, Sym.token, List.filter_map, Function.comp_def, filter_fun_true]

/-- A render splits where the second part starts with a symbol that is not a character (a
control token, a verbatim token): the span before it is closed, so the cells of the first part
never depend on what follows. -/
theorem encodeItems_append (c : Codec) (a b : List Item)
    (h : ∀ x ∈ (syms b).head?, x.isCh = false) :
    encodeItems c (a ++ b) = encodeItems c a ++ encodeItems c b := by
  have hb := splitBy_asyms_fst_nil b h
  simp only [encodeItems, asyms_append, splitBy_append_of_fst_nil _ _ _ hb, hb,
    encodeRunCells_nil, List.flatMap_append, List.nil_append, List.append_assoc]

/-- Every cell of a render carries the owner and loss bit of one of the layout's items. -/
theorem encodeItems_ann (c : Codec) (items : List Item) :
    ∀ x ∈ encodeItems c items, ∃ i ∈ items, x.owner = i.ann.owner ∧ x.loss = i.ann.learn := by
  intro x hx
  have hQ : ∀ z ∈ asyms items, (fun a => ∃ i ∈ items, a = i.ann) z.2 := fun z hz => by
    obtain ⟨i, hi, -, e⟩ := mem_asyms hz
    exact ⟨i, hi, e⟩
  simp only [encodeItems, List.mem_append, List.mem_flatMap, List.mem_cons] at hx
  rcases hx with hx | ⟨y, hy, rfl | hx⟩
  · obtain ⟨a, ⟨i, hi, rfl⟩, h1, h2⟩ :=
      mem_encodeRunCells (Q := fun a => ∃ i ∈ items, a = i.ann)
        (fun z hz => hQ z (mem_of_mem_splitBy_fst _ _ hz)) x hx
    exact ⟨i, hi, h1, h2⟩
  · obtain ⟨i, hi, -, e⟩ := mem_asyms (splitBy_snd_mem _ _ y hy)
    exact ⟨i, hi, congrArg Ann.owner e, congrArg Ann.learn e⟩
  · obtain ⟨a, ⟨i, hi, rfl⟩, h1, h2⟩ :=
      mem_encodeRunCells (Q := fun a => ∃ i ∈ items, a = i.ann)
        (fun z hz => hQ z (mem_of_mem_splitBy_snd _ _ hy z hz)) x hx
    exact ⟨i, hi, h1, h2⟩

/-- When no text item is learned, the learned cells of a render are exactly the learned
control and verbatim tokens, in order, with their owners. -/
theorem learned_of_no_learned_text (c : Codec) (items : List Item)
    (h : ∀ i ∈ items, i.ann.learn = true → ∀ cs, i.piece ≠ .text cs) :
    ((encodeItems c items).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      items.flatMap (fun i => if i.ann.learn then
        (match i.piece with
          | .ctrl t => [(t, i.ann.owner)]
          | .toks ts => ts.map (·, i.ann.owner)
          | .text _ => [])
        else []) := by
  have hrun : ∀ z ∈ asyms items, z.1.isCh = true → z.2.learn = false := by
    intro z hz hch
    obtain ⟨i, hi, hs, e⟩ := mem_asyms hz
    rw [e]
    cases hl : i.ann.learn
    · rfl
    · exfalso
      cases hp : i.piece with
      | text cs => exact h i hi hl cs hp
      | ctrl t =>
        rw [hp] at hs
        simp only [Piece.syms, List.mem_singleton] at hs
        rw [hs] at hch
        cases hch
      | toks ts =>
        rw [hp] at hs
        simp only [Piece.syms, List.mem_map] at hs
        obtain ⟨t, -, ht⟩ := hs
        rw [← ht] at hch
        cases hch
  have h1 : ∀ z ∈ (splitBy (fun x : Sym × Ann => !x.1.isCh) (asyms items)).1,
      z.2.learn = false := fun z hz =>
    hrun z (mem_of_mem_splitBy_fst _ _ hz) (by simpa using splitBy_fst_false _ _ z hz)
  have h2 : ∀ y ∈ (splitBy (fun x : Sym × Ann => !x.1.isCh) (asyms items)).2,
      ∀ z ∈ y.2, z.2.learn = false := fun y hy z hz =>
    hrun z (mem_of_mem_splitBy_snd _ _ hy z hz) (by simpa using (splitBy_snd _ _ y hy).2 z hz)
  simp only [encodeItems, List.filter_append, filter_loss_encodeRunCells h1, List.nil_append,
    learned_flatMap c _ h2, map_fst_splitBy_snd]
  exact learned_asyms items

end Verified

end
