module

public import Verified.Spec.Parse
public import Verified.Thm.Format

public section

/-!
# Round trip: parsing a render gives back the conversation

For a well-formed format and a valid pre-encoded conversation, `parse` applied to the token
ids of `renderTok` returns exactly the conversation (`parse_render`), payload tokens
included. Consequences: the string-level version (`parse_render_text`) and injectivity of
the render on valid conversations (`renderTok_injective`).

The proof works on plain token lists: `rb`, `rbs`, `rm`, `rms` are the token ids of a
rendered block, block list, message and message list. It then follows the parser:
delimiters are stripped exactly (`stripPrefix?_append`), a payload is read up to the next
reserved token (`takeFree_append`), and at every point where the parser has to choose
(which header, which opener, whether a block starts) the well-formedness facts of
`Verified.Thm.Format` rule out every wrong choice.
-/

namespace Verified

namespace RoundTrip

open Format

variable {f : EncFormat}

/-! ### Token-level render -/

/-- The tokens of a block after its opener (payloads, separator, closer). -/
def body (f : EncFormat) : Block (List Token) → List Token
  | .plain p => p ++ f.blockClose .plain
  | .reasoning p => p ++ f.blockClose .reasoning
  | .toolCall n a => n ++ (f.toolSep ++ (a ++ f.blockClose .toolCall))

/-- The tokens of a rendered block. -/
def rb (f : EncFormat) (b : Block (List Token)) : List Token := f.blockOpen b.kind ++ body f b

/-- The tokens of rendered blocks. -/
def rbs (f : EncFormat) : List (Block (List Token)) → List Token
  | [] => []
  | b :: bs => rb f b ++ rbs f bs

/-- The tokens of a rendered message. -/
def rm (f : EncFormat) (m : Message (List Token)) : List Token :=
  f.header m.role ++ (rbs f m.blocks ++ f.footer m.role)

/-- The tokens of rendered messages. -/
def rms (f : EncFormat) : List (Message (List Token)) → List Token
  | [] => []
  | m :: ms => rm f m ++ rms f ms

/-- The tokens of the optional generation prompt. -/
def promptToks (f : EncFormat) (g : Bool) : List Token := if g then f.header .assistant else []

theorem ids_nil : ids [] = [] := rfl

theorem ids_append (a b : List Cell) : ids (a ++ b) = ids a ++ ids b := by
  simp [ids]

theorem ids_cellsOf (s : Src) (i : Nat) (l : Bool) (ts : List Token) :
    ids (cellsOf s i l ts) = ts := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    show t :: ids (cellsOf s i l ts) = t :: ts
    rw [ih]

theorem ids_renderFooter (i : Nat) (l : Bool) (ts : List Token) :
    ids (f.renderFooter i l ts) = ts := by
  cases ts with
  | nil => rfl
  | cons t ts =>
    show t :: ids (cellsOf .footer i l ts) = t :: ts
    rw [ids_cellsOf]

theorem ids_renderBlock (i : Nat) (l : Bool) (b : Block (List Token)) :
    ids (f.renderBlock i l b) = rb f b := by
  cases b <;> simp only [Format.renderBlock, ids_append, ids_cellsOf, rb, body, Block.kind,
    List.append_assoc]

theorem ids_renderBlocks (i : Nat) (l : Bool) (bs : List (Block (List Token))) :
    ids (f.renderBlocks i l bs) = rbs f bs := by
  induction bs with
  | nil => rfl
  | cons b bs ih => simp only [Format.renderBlocks, rbs, ids_append, ids_renderBlock, ih]

theorem ids_renderMsg (i : Nat) (m : Message (List Token)) :
    ids (f.renderMsg i m) = rm f m := by
  simp only [Format.renderMsg, ids_append, ids_cellsOf, ids_renderBlocks, ids_renderFooter, rm,
    List.append_assoc]

theorem ids_renderMsgs (ms : List (Message (List Token))) :
    ∀ i, ids (f.renderMsgs i ms) = rms f ms := by
  induction ms with
  | nil => intro i; rfl
  | cons m ms ih =>
    intro i
    simp only [Format.renderMsgs, rms, ids_append, ids_renderMsg, ih]

theorem ids_renderTok (c : Conversation (List Token)) :
    ids (f.renderTok c) = f.bos ++ (rms f c.messages ++ promptToks f c.addGenerationPrompt) := by
  simp only [Format.renderTok, ids_append, ids_cellsOf, ids_renderMsgs, List.append_assoc]
  cases c.addGenerationPrompt with
  | false => simp [promptToks, ids_nil]
  | true => simp [promptToks, Format.renderPrompt, ids_cellsOf]

/-! ### Stripping delimiters and reading payloads -/

theorem length_pos_of_ne_nil {l : List Token} (h : l ≠ []) : 0 < l.length := by
  cases l with
  | nil => exact absurd rfl h
  | cons _ _ => simp

theorem stripPrefix?_append (p rest : List Token) : stripPrefix? p (p ++ rest) = some rest := by
  induction p with
  | nil => simp [stripPrefix?]
  | cons x p ih => simp [stripPrefix?, ih]

theorem eq_append_of_stripPrefix? {p ts rest : List Token}
    (h : stripPrefix? p ts = some rest) : ts = p ++ rest := by
  induction p generalizing ts with
  | nil =>
    simp [stripPrefix?] at h
    simp [h]
  | cons x p ih =>
    cases ts with
    | nil => simp [stripPrefix?] at h
    | cons t ts =>
      simp only [stripPrefix?] at h
      split at h
      · rename_i hxt
        simp [ih h, beq_iff_eq.mp hxt]
      · simp at h

theorem stripOpen_append {d : List Token} (hd : d ≠ []) (x : List Token) :
    f.stripOpen d (d ++ x) = some x := by
  simp [Format.stripOpen, hd, stripPrefix?_append]

theorem stripOpen_eq_none {d e : List Token} (h : d = [] ∨ incomparable d e = true)
    (x : List Token) : f.stripOpen d (e ++ x) = none := by
  unfold Format.stripOpen
  rcases h with h | h
  · simp [h]
  · split
    · rfl
    · cases hs : stripPrefix? d (e ++ x) with
      | none => rfl
      | some r => exact absurd (eq_append_of_stripPrefix? hs).symm (append_ne_of_incomparable h)

theorem stripOpen_nil (d : List Token) : f.stripOpen d [] = none := by
  unfold Format.stripOpen
  cases d <;> simp [stripPrefix?]

theorem stripOpen_free {d : List Token} {t : Token} (x : List Token) (hg : f.guarded d = true)
    (ht : isReserved f.reserved t = false) : f.stripOpen d (t :: x) = none := by
  unfold Format.stripOpen
  cases d with
  | nil => simp
  | cons u d =>
    have hu : isReserved f.reserved u = true := by simpa [guarded, leadsReserved] using hg
    have hne : u ≠ t := by
      rintro rfl
      rw [hu] at ht
      contradiction
    simp [stripPrefix?, hne]

/-- What may follow a payload: nothing, or a reserved token. -/
def Stops (f : EncFormat) (ts : List Token) : Prop :=
  ts = [] ∨ leadsReserved f.reserved ts = true

theorem takeFree_append {res p rest : List Token} (hp : allFree res p = true)
    (hr : rest = [] ∨ leadsReserved res rest = true) : takeFree res (p ++ rest) = (p, rest) := by
  induction p with
  | nil =>
    rcases hr with rfl | hr
    · simp [takeFree]
    · cases rest with
      | nil => simp [takeFree]
      | cons t r =>
        simp only [leadsReserved] at hr
        simp [takeFree, hr]
  | cons t p ih =>
    have hp' : isReserved res t = false ∧ allFree res p = true := by
      simpa [allFree] using hp
    simp [takeFree, hp'.1, ih hp'.2]

/-! ### Blocks -/

theorem blockOk_open_ne {b : Block (List Token)} (hb : f.blockOk b = true)
    (hs : f.openStart b = false) : f.blockOpen b.kind ≠ [] := by
  cases b with
  | plain p => simpa [Format.openStart, Format.plainBare, Block.kind] using hs
  | reasoning p =>
    simp only [Format.blockOk, Bool.and_eq_true] at hb
    exact open_ne_of_hasKind (k := .reasoning) hb.1 (by decide)
  | toolCall n a =>
    simp only [Format.blockOk, Bool.and_eq_true] at hb
    exact open_ne_of_hasKind (k := .toolCall) hb.1.1.1 (by decide)

theorem bare_plain {b : Block (List Token)} (hb : f.blockOk b = true)
    (ho : f.blockOpen b.kind = []) :
    ∃ t p, b = .plain (t :: p) ∧ f.plainBare = true ∧ isReserved f.reserved t = false ∧
      allFree f.reserved (t :: p) = true := by
  cases b with
  | plain p =>
    simp only [Block.kind] at ho
    have hpb : f.plainBare = true := by simp [Format.plainBare, ho]
    simp only [Format.blockOk, Bool.and_eq_true, hpb] at hb
    cases p with
    | nil => simp at hb
    | cons t p =>
      have ht : isReserved f.reserved t = false := by
        have h1 := hb.1.2
        simp only [allFree, List.all_cons, Bool.and_eq_true] at h1
        simpa using h1.1
      exact ⟨t, p, rfl, hpb, ht, hb.1.2⟩
  | reasoning p =>
    simp only [Format.blockOk, Bool.and_eq_true] at hb
    exact absurd ho (open_ne_of_hasKind (k := .reasoning) hb.1 (by decide))
  | toolCall n a =>
    simp only [Format.blockOk, Bool.and_eq_true] at hb
    exact absurd ho (open_ne_of_hasKind (k := .toolCall) hb.1.1.1 (by decide))

theorem rb_ne_nil {b : Block (List Token)} (hb : f.blockOk b = true) : rb f b ≠ [] := by
  by_cases ho : f.blockOpen b.kind = []
  · obtain ⟨t, p, rfl, -⟩ := bare_plain hb ho
    simp [rb, body]
  · simp [rb, ho]

theorem length_le_rbs : ∀ {ao : Bool} {bs : List (Block (List Token))},
    f.blocksOk ao bs = true → bs.length ≤ (rbs f bs).length
  | _, [], _ => by simp
  | _, b :: bs, h => by
    simp only [Format.blocksOk, Bool.and_eq_true] at h
    have h1 := length_pos_of_ne_nil (rb_ne_nil h.1.1)
    have h2 := length_le_rbs h.2
    simp only [rbs, List.length_cons, List.length_append]
    omega

/-- Parsing the body of a valid block (after its opener) gives the block back, provided what
follows its closer cannot be read as payload. -/
theorem parseBody_body (hf : f.wf = true) {b : Block (List Token)} (hb : f.blockOk b = true)
    {rest : List Token} (hr : Stops f (f.blockClose b.kind ++ rest)) :
    f.parseBody b.kind (body f b ++ rest) = some (b, rest) := by
  cases b with
  | plain p =>
    have hp : allFree f.reserved p = true := by
      simp only [Format.blockOk, Bool.and_eq_true] at hb
      exact hb.1.2
    simp only [Block.kind] at hr
    simp [Block.kind, body, Format.parseBody, takeFree_append hp hr, stripPrefix?_append]
  | reasoning p =>
    have hp : allFree f.reserved p = true := by
      simp only [Format.blockOk, Bool.and_eq_true] at hb
      exact hb.2
    simp only [Block.kind] at hr
    simp [Block.kind, body, Format.parseBody, takeFree_append hp hr, stripPrefix?_append]
  | toolCall n a =>
    simp only [Block.kind] at hr
    simp only [Format.blockOk, Bool.and_eq_true, Bool.or_eq_true] at hb
    obtain ⟨⟨⟨_, hn⟩, ha⟩, hsn⟩ := hb
    by_cases hs : f.toolSep = []
    · have hn0 : n = [] := by simpa [hs] using hsn
      subst hn0
      simp [Block.kind, body, Format.parseBody, hs, takeFree_append ha hr, stripPrefix?_append]
    · have hsr : Stops f (f.toolSep ++ (a ++ (f.blockClose .toolCall ++ rest))) :=
        Or.inr (leadsReserved_append_of_guarded (wf_toolSep_guarded hf) hs _)
      simp [Block.kind, body, Format.parseBody, hs, takeFree_append hn hsr, stripPrefix?_append,
        takeFree_append ha hr]

/-- What may follow the blocks of a message: nothing, a non-empty footer, or a supported
header. -/
def Bnd (f : EncFormat) (ts : List Token) : Prop :=
  ts = [] ∨ (∃ r x, f.footer r ≠ [] ∧ ts = f.footer r ++ x) ∨
    (∃ r x, f.header r ≠ [] ∧ ts = f.header r ++ x)

theorem bnd_stops (hf : f.wf = true) {ts : List Token} (h : Bnd f ts) : Stops f ts := by
  rcases h with h | ⟨r, x, hr, rfl⟩ | ⟨r, x, hr, rfl⟩
  · exact Or.inl h
  · exact Or.inr (leadsReserved_append_of_guarded (wf_footer_guarded hf r) hr x)
  · exact Or.inr (leadsReserved_append_of_guarded (wf_header_guarded hf r) hr x)

theorem matchOpen_eq_none {ts : List Token} (h : ∀ k, f.stripOpen (f.blockOpen k) ts = none) :
    f.matchOpen ts = none := by
  simp [Format.matchOpen, BlockKind.all, List.findSome?, h]

theorem matchOpen_open (hf : f.wf = true) {k : BlockKind} (hk : f.blockOpen k ≠ [])
    (x : List Token) : f.matchOpen (f.blockOpen k ++ x) = some (k, x) := by
  have hne : ∀ k', k' ≠ k → f.stripOpen (f.blockOpen k') (f.blockOpen k ++ x) = none := by
    intro k' hk'
    apply stripOpen_eq_none
    by_cases h0 : f.blockOpen k' = []
    · exact Or.inl h0
    · exact Or.inr (wf_open_incomparable hf hk' h0 hk)
  cases k <;> simp [Format.matchOpen, BlockKind.all, List.findSome?, hne, stripOpen_append hk]

theorem matchOpen_bnd (hf : f.wf = true) {ts : List Token} (h : Bnd f ts) :
    f.matchOpen ts = none := by
  apply matchOpen_eq_none
  intro k
  by_cases hk : f.blockOpen k = []
  · simp [Format.stripOpen, hk]
  · rcases h with rfl | ⟨r, x, hr, rfl⟩ | ⟨r, x, hr, rfl⟩
    · exact stripOpen_nil _
    · exact stripOpen_eq_none (Or.inr ((wf_open_apart hf hk r).1 hr)) x
    · exact stripOpen_eq_none (Or.inr ((wf_open_apart hf hk r).2 hr)) x

theorem stops_after (hf : f.wf = true) {b : Block (List Token)} {bs : List (Block (List Token))}
    {rest : List Token} (hbs : f.blocksOk (f.openEnd b) bs = true) (hrest : Bnd f rest) :
    Stops f (f.blockClose b.kind ++ (rbs f bs ++ rest)) := by
  by_cases hc : f.blockClose b.kind = []
  · rw [hc, List.nil_append]
    have hoe : f.openEnd b = true := by simp [Format.openEnd, hc]
    rw [hoe] at hbs
    cases bs with
    | nil =>
      simp only [rbs, List.nil_append]
      exact bnd_stops hf hrest
    | cons b' bs' =>
      simp only [Format.blocksOk, Bool.and_eq_true] at hbs
      have hs : f.openStart b' = false := by simpa using hbs.1.2
      have hne := blockOk_open_ne hbs.1.1 hs
      simp only [rbs, rb, List.append_assoc]
      exact Or.inr (leadsReserved_append_of_guarded (wf_open_guarded hf _) hne _)
  · exact Or.inr (leadsReserved_append_of_guarded (wf_close_guarded hf _) hc _)

/-- Parsing rendered valid blocks followed by a message boundary gives the blocks back. -/
theorem parseBlocks_rbs (hf : f.wf = true) {rest : List Token} (hrest : Bnd f rest) :
    ∀ (bs : List (Block (List Token))) (ao : Bool) (n : Nat), f.blocksOk ao bs = true →
      bs.length ≤ n → f.parseBlocks (n + 1) (rbs f bs ++ rest) = some (bs, rest) := by
  intro bs
  induction bs with
  | nil =>
    intro ao n _ _
    have hm := matchOpen_bnd hf hrest
    rcases bnd_stops hf hrest with h | h
    · subst h
      simp [rbs, Format.parseBlocks, hm]
    · cases rest with
      | nil => simp [rbs, Format.parseBlocks, hm]
      | cons t r =>
        simp only [leadsReserved] at h
        simp [rbs, Format.parseBlocks, hm, h]
  | cons b bs ih =>
    intro ao n hok hlen
    obtain ⟨n, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hlen; omega⟩
    simp only [Format.blocksOk, Bool.and_eq_true] at hok
    obtain ⟨⟨hb, _⟩, hbs⟩ := hok
    have hlen' : bs.length ≤ n := by simp at hlen; omega
    have ih' := ih (f.openEnd b) n hbs hlen'
    have hbody := parseBody_body hf hb (stops_after hf hbs hrest)
    by_cases ho : f.blockOpen b.kind = []
    · obtain ⟨t, p, rfl, hpb, ht, _⟩ := bare_plain hb ho
      have hm : f.matchOpen (t :: (p ++ (f.blockClose .plain ++ (rbs f bs ++ rest)))) = none :=
        matchOpen_eq_none fun k => stripOpen_free _ (wf_open_guarded hf k) ht
      have e : rbs f (.plain (t :: p) :: bs) ++ rest =
          t :: (p ++ (f.blockClose .plain ++ (rbs f bs ++ rest))) := by
        simp only [Block.kind] at ho
        simp [rbs, rb, Block.kind, body, ho]
      have hbody' : f.parseBody .plain (t :: (p ++ (f.blockClose .plain ++ (rbs f bs ++ rest))))
          = some (.plain (t :: p), rbs f bs ++ rest) := by
        have h1 := hbody
        simp only [Block.kind, body, List.cons_append, List.append_assoc] at h1
        exact h1
      rw [e, Format.parseBlocks, hm]
      simp [hpb, ht, hbody', ih']
    · -- the equation lemmas of `parseBlocks` split on the input, so expose its first token
      obtain ⟨u, us, hu⟩ : ∃ u us, f.blockOpen b.kind = u :: us := by
        cases h : f.blockOpen b.kind with
        | nil => exact absurd h ho
        | cons u us => exact ⟨u, us, rfl⟩
      have hmo := matchOpen_open hf ho (body f b ++ (rbs f bs ++ rest))
      rw [hu, List.cons_append] at hmo
      have e : rbs f (b :: bs) ++ rest = u :: (us ++ (body f b ++ (rbs f bs ++ rest))) := by
        simp [rbs, rb, hu]
      rw [e, Format.parseBlocks, hmo]
      simp [hbody, ih']

/-! ### Messages -/

/-- What may follow a message: nothing, or a supported header. -/
def HeadOrNil (f : EncFormat) (ts : List Token) : Prop :=
  ts = [] ∨ ∃ r x, f.header r ≠ [] ∧ ts = f.header r ++ x

theorem matchHeader_header (hf : f.wf = true) {r : Role} (hr : f.header r ≠ [])
    (x : List Token) : f.matchHeader (f.header r ++ x) = some (r, x) := by
  have hne : ∀ r', r' ≠ r → f.stripOpen (f.header r') (f.header r ++ x) = none := by
    intro r' hr'
    apply stripOpen_eq_none
    by_cases h0 : f.header r' = []
    · exact Or.inl h0
    · exact Or.inr (wf_header_incomparable hf hr' h0 hr)
  cases r <;> simp [Format.matchHeader, Role.all, List.findSome?, hne, stripOpen_append hr]

theorem header_ne_of_msgOk {m : Message (List Token)} (hm : f.msgOk m = true) :
    f.header m.role ≠ [] := by
  simp only [Format.msgOk, Bool.and_eq_true] at hm
  exact (supports_iff _).mp hm.1

theorem rm_ne_nil {m : Message (List Token)} (hm : f.msgOk m = true) : rm f m ≠ [] := by
  intro h
  have h1 := congrArg List.length h
  have h2 := length_pos_of_ne_nil (header_ne_of_msgOk hm)
  simp only [rm, List.length_append, List.length_nil] at h1
  omega

theorem length_le_rms : ∀ {ms : List (Message (List Token))},
    ms.all f.msgOk = true → ms.length ≤ (rms f ms).length
  | [], _ => by simp
  | m :: ms, h => by
    simp only [List.all_cons, Bool.and_eq_true] at h
    have h1 := length_pos_of_ne_nil (rm_ne_nil h.1)
    have h2 := length_le_rms h.2
    simp only [rms, List.length_cons, List.length_append]
    omega

/-- Parsing a rendered valid message followed by nothing or a supported header gives the
message back. -/
theorem parseMsg_rm (hf : f.wf = true) {m : Message (List Token)} (hm : f.msgOk m = true)
    {rest : List Token} (hrest : HeadOrNil f rest) :
    f.parseMsg (rm f m ++ rest) = some (m, rest) := by
  obtain ⟨r, bs⟩ := m
  have hr : f.header r ≠ [] := header_ne_of_msgOk hm
  have hb : f.blocksOk false bs = true := by
    simp only [Format.msgOk, Bool.and_eq_true] at hm
    exact hm.2
  have hbnd : Bnd f (f.footer r ++ rest) := by
    by_cases hfo : f.footer r = []
    · rw [hfo, List.nil_append]
      rcases hrest with h | ⟨r', x, h1, h2⟩
      · exact Or.inl h
      · exact Or.inr (Or.inr ⟨r', x, h1, h2⟩)
    · exact Or.inr (Or.inl ⟨r, rest, hfo, rfl⟩)
  have hlen : bs.length ≤ (rbs f bs ++ (f.footer r ++ rest)).length := by
    have := length_le_rbs hb
    simp only [List.length_append]
    omega
  have h2 := parseBlocks_rbs hf hbnd bs false _ hb hlen
  have e : rm f ⟨r, bs⟩ ++ rest = f.header r ++ (rbs f bs ++ (f.footer r ++ rest)) := by
    simp [rm]
  rw [e, Format.parseMsg, matchHeader_header hf hr]
  dsimp only
  rw [h2]
  simp [stripPrefix?_append]

theorem rm_append_ne (hf : f.wf = true) {m : Message (List Token)} (hm : f.msgOk m = true)
    (x : List Token) : rm f m ++ x ≠ f.header .assistant := by
  obtain ⟨r, bs⟩ := m
  have hr : f.header r ≠ [] := header_ne_of_msgOk hm
  intro h
  by_cases hra : r = .assistant
  · subst hra
    have hl := congrArg List.length h
    have hfo := length_pos_of_ne_nil (wf_footer_assistant_ne hf)
    simp only [rm, List.length_append] at hl
    omega
  · have hi := wf_header_incomparable hf hra hr (wf_header_assistant_ne hf)
    have h' : f.header r ++ (rbs f bs ++ (f.footer r ++ x)) = f.header .assistant ++ [] := by
      rw [List.append_nil, ← h]
      simp [rm]
    exact append_ne_of_incomparable hi h'

theorem headOrNil_prompt (hf : f.wf = true) (g : Bool) : HeadOrNil f (promptToks f g) := by
  cases g with
  | false => exact Or.inl rfl
  | true => exact Or.inr ⟨.assistant, [], wf_header_assistant_ne hf, by simp [promptToks]⟩

theorem headOrNil_rms (hf : f.wf = true) (g : Bool) :
    ∀ {ms : List (Message (List Token))}, ms.all f.msgOk = true →
      HeadOrNil f (rms f ms ++ promptToks f g)
  | [], _ => by simpa [rms] using headOrNil_prompt hf g
  | m :: ms, h => by
    simp only [List.all_cons, Bool.and_eq_true] at h
    refine Or.inr ⟨m.role, rbs f m.blocks ++ (f.footer m.role ++ (rms f ms ++ promptToks f g)),
      header_ne_of_msgOk h.1, ?_⟩
    simp [rms, rm]

/-- Parsing rendered valid messages followed by the optional prompt gives them back. -/
theorem parseMsgs_rms (hf : f.wf = true) (g : Bool) :
    ∀ (ms : List (Message (List Token))) (n : Nat), ms.length ≤ n → ms.all f.msgOk = true →
      f.parseMsgs (n + 1) (rms f ms ++ promptToks f g) = some (ms, g) := by
  intro ms
  induction ms with
  | nil =>
    intro n _ _
    cases g with
    | false => simp [rms, promptToks, Format.parseMsgs]
    | true =>
      have := wf_header_assistant_ne hf
      simp [rms, promptToks, Format.parseMsgs, this]
  | cons m ms ih =>
    intro n hlen hall
    obtain ⟨n, rfl⟩ : ∃ k, n = k + 1 := ⟨n - 1, by simp at hlen; omega⟩
    have hall' := hall
    simp only [List.all_cons, Bool.and_eq_true] at hall'
    have hlen' : ms.length ≤ n := by simp at hlen; omega
    have ih' := ih n hlen' hall'.2
    have hpm := parseMsg_rm hf hall'.1 (headOrNil_rms hf g hall'.2)
    have hne := rm_append_ne hf hall'.1 (rms f ms ++ promptToks f g)
    have h1 : ¬ ((rm f m ++ (rms f ms ++ promptToks f g)).isEmpty = true) := by
      intro h
      cases hh : rm f m with
      | nil => exact rm_ne_nil hall'.1 hh
      | cons a l =>
        rw [hh] at h
        simp at h
    have h2 : ¬ ((rm f m ++ (rms f ms ++ promptToks f g)) == f.header .assistant) = true := by
      intro h
      exact hne (beq_iff_eq.mp h)
    have e : rms f (m :: ms) ++ promptToks f g = rm f m ++ (rms f ms ++ promptToks f g) := by
      simp [rms]
    rw [e, Format.parseMsgs, if_neg h1, if_neg h2, hpm]
    simp only [ih']

end RoundTrip

open Format RoundTrip

/-- **Round trip.** For a well-formed format and a valid pre-encoded conversation, parsing the
token ids of the render gives back exactly the conversation: the same messages, roles,
blocks and payload tokens, and the same generation-prompt flag. So the token sequence a
policy is trained on carries the whole conversation, with no ambiguity. -/
theorem parse_render (f : EncFormat) (hf : f.WellFormed) (c : Conversation (List Token))
    (hc : f.Valid c) : f.parse (ids (f.renderTok c)) = some c := by
  have hall : c.messages.all f.msgOk = true := hc
  have hlen : c.messages.length ≤ (rms f c.messages ++ promptToks f c.addGenerationPrompt).length := by
    have := length_le_rms hall
    simp only [List.length_append]
    omega
  rw [ids_renderTok, Format.parse, stripPrefix?_append]
  dsimp only
  have h3 := parseMsgs_rms hf c.addGenerationPrompt c.messages _ hlen hall
  (rw [h3]) <;> rfl

/-- **Round trip, text level.** Rendering a valid text conversation with the string-level
`render` and parsing the token ids gives back its pre-encoded form (each text payload as the
codec's tokens for it), for every format whose pre-encoded form is well-formed. -/
theorem parse_render_text (fmt : ChatFormat) (codec : Codec)
    (hf : (fmt.encode codec).WellFormed) (c : Conversation Payload) (hc : fmt.Valid codec c) :
    (fmt.encode codec).parse (ids (render fmt codec c)) = some (c.toTokens codec) :=
  parse_render (fmt.encode codec) hf (c.toTokens codec) hc

/-- **The render is injective on valid conversations.** Two valid conversations with the
same rendered token ids are equal: distinct conversations never collapse to the same
training sequence. -/
theorem renderTok_injective (f : EncFormat) (hf : f.WellFormed) (c d : Conversation (List Token))
    (hc : f.Valid c) (hd : f.Valid d) (h : ids (f.renderTok c) = ids (f.renderTok d)) :
    c = d := by
  have h1 := parse_render f hf c hc
  rw [h, parse_render f hf d hd] at h1
  exact (Option.some.inj h1).symm

end Verified

end
