module

public import Verified.Spec.Parse

public section

/-!
# Soundness of the parser

`render_parse`: whatever token list the parser accepts re-renders to exactly that token list,
so the parser never invents a conversation. `parse_valid`: every conversation it returns is
valid for the format (payloads free of reserved tokens, no merged bare plain blocks, only
supported roles and usable block kinds). `toTokens_decode`: decoding payloads to text never
loses information.

The proofs go bottom-up: `stripPrefix?` and `takeFree`, then `parseBody`, `parseBlocks`
(induction on fuel), `parseMsg`, `parseMsgs` (induction on fuel) and `parse`. Each step proves
the rendering equation for every owner index and loss bit at once, since token ids do not
depend on them.
-/

namespace Verified

open Format

/-! ## Basic lemmas -/

/-- `stripPrefix? p ts` succeeds with `rest` exactly when `ts` is `p` followed by `rest`. -/
theorem stripPrefix?_eq_some_iff {p ts rest : List Token} :
    stripPrefix? p ts = some rest ↔ ts = p ++ rest := by
  induction p generalizing ts with
  | nil => simp [stripPrefix?]
  | cons a ps ih =>
    cases ts with
    | nil => simp [stripPrefix?]
    | cons t ts =>
      simp only [stripPrefix?, List.cons_append, List.cons.injEq]
      by_cases h : a = t
      · subst h
        simp [ih]
      · simp [h, Ne.symm h]

namespace ParseSound

theorem takeFree_cons_res {res ts : List Token} {t : Token} (h : isReserved res t = true) :
    takeFree res (t :: ts) = ([], t :: ts) := by
  simp only [takeFree]
  rw [if_pos h]

theorem takeFree_cons_free {res ts : List Token} {t : Token} (h : isReserved res t = false) :
    takeFree res (t :: ts) = (t :: (takeFree res ts).1, (takeFree res ts).2) := by
  simp only [takeFree]
  rw [if_neg (show ¬ (isReserved res t = true) by rw [h]; decide)]

theorem map_some {α β : Type} {o : Option α} {g : α → β} {y : β} (h : o.map g = some y) :
    ∃ a, o = some a ∧ g a = y := by
  cases o with
  | none => simp at h
  | some a => exact ⟨a, rfl, by simpa using h⟩

theorem findSome_pair {α : Type} {g : α → Option (List Token)} {k : α} {r : List Token} :
    ∀ {l : List α}, l.findSome? (fun x => (g x).map fun rest => (x, rest)) = some (k, r) →
      g k = some r
  | [], h => by simp at h
  | x :: xs, h => by
    cases hx : g x with
    | none =>
      simp only [List.findSome?, hx, Option.map_none] at h
      exact findSome_pair h
    | some y =>
      simp only [List.findSome?, hx, Option.map_some, Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      exact hx

theorem eq_nil_of_isEmpty {α : Type} {l : List α} (h : l.isEmpty = true) : l = [] := by
  cases l with
  | nil => rfl
  | cons _ _ => simp at h

theorem allFree_nil (res : List Token) : allFree res [] = true := rfl

end ParseSound

open ParseSound

/-- `takeFree` splits its input: the free run followed by the rest is the input. -/
theorem takeFree_spec (res ts : List Token) : (takeFree res ts).1 ++ (takeFree res ts).2 = ts := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    cases hr : isReserved res t with
    | false =>
      rw [takeFree_cons_free hr]
      simp only [List.cons_append, ih]
    | true =>
      rw [takeFree_cons_res hr]
      rfl

/-- The run split off by `takeFree` contains no reserved token. -/
theorem takeFree_free (res ts : List Token) : allFree res (takeFree res ts).1 = true := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    cases hr : isReserved res t with
    | false =>
      rw [takeFree_cons_free hr]
      show (!isReserved res t && allFree res (takeFree res ts).1) = true
      rw [hr, ih]
      rfl
    | true =>
      rw [takeFree_cons_res hr]
      rfl

/-- What `takeFree` leaves over starts with a reserved token (if anything is left). -/
theorem takeFree_rest_head {res ts tl : List Token} {t : Token} :
    (takeFree res ts).2 = t :: tl → isReserved res t = true := by
  induction ts with
  | nil => intro h; simp [takeFree] at h
  | cons u us ih =>
    intro h
    cases hr : isReserved res u with
    | false =>
      rw [takeFree_cons_free hr] at h
      exact ih h
    | true =>
      rw [takeFree_cons_res hr] at h
      simp only [List.cons.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      exact hr

/-- What `takeFree` leaves over is empty or led by a reserved token. -/
theorem takeFree_rest (res ts : List Token) :
    (takeFree res ts).2 = [] ∨ leadsReserved res (takeFree res ts).2 = true := by
  cases hr : (takeFree res ts).2 with
  | nil => exact Or.inl rfl
  | cons t tl => exact Or.inr (takeFree_rest_head hr)

/-! ## Token ids of renders -/

namespace ParseSound

theorem ids_nil : ids [] = [] := rfl

theorem ids_append (a b : List Cell) : ids (a ++ b) = ids a ++ ids b := by
  simp [ids]

theorem ids_cellsOf (src : Src) (i : Nat) (l : Bool) (ts : List Token) :
    ids (cellsOf src i l ts) = ts := by
  induction ts with
  | nil => rfl
  | cons t ts ih =>
    show t :: ids (cellsOf src i l ts) = t :: ts
    rw [ih]

theorem ids_renderBlock_indep (f : EncFormat) (i j : Nat) (l l' : Bool)
    (b : Block (List Token)) : ids (f.renderBlock i l b) = ids (f.renderBlock j l' b) := by
  cases b <;> simp only [renderBlock, ids_append, ids_cellsOf]

/-- The token ids of rendered blocks do not depend on the owner index or the loss bit. -/
theorem ids_renderBlocks_indep (f : EncFormat) (i j : Nat) (l l' : Bool)
    (bs : List (Block (List Token))) :
    ids (f.renderBlocks i l bs) = ids (f.renderBlocks j l' bs) := by
  induction bs with
  | nil => rfl
  | cons b bs ih =>
    simp only [renderBlocks, ids_append, ih, ids_renderBlock_indep f i j l l' b]

/-- Token ids of a rendered message: header, blocks, footer. -/
theorem ids_renderMsg (f : EncFormat) (i : Nat) (m : Message (List Token)) :
    ids (f.renderMsg i m) = f.header m.role ++
      (ids (f.renderBlocks i (m.role == .assistant) m.blocks) ++ f.footer m.role) := by
  simp only [renderMsg, ids_append, ids_cellsOf, List.append_assoc]
  congr 2
  cases f.footer m.role with
  | nil => rfl
  | cons t ts => exact congrArg (t :: ·) (ids_cellsOf .footer i (m.role == .assistant) ts)

/-- The token ids of rendered messages do not depend on the index of the first message. -/
theorem ids_renderMsgs_indep (f : EncFormat) (ms : List (Message (List Token))) :
    ∀ i j : Nat, ids (f.renderMsgs i ms) = ids (f.renderMsgs j ms) := by
  induction ms with
  | nil => intro i j; rfl
  | cons m ms ih =>
    intro i j
    have hb := ids_renderBlocks_indep f i j (m.role == .assistant) (m.role == .assistant) m.blocks
    simp only [renderMsgs, ids_append, ids_renderMsg, hb, ih (i + 1) (j + 1)]

end ParseSound

/-! ## Matching delimiters -/

namespace ParseSound

variable (f : EncFormat)

theorem strip_if_some {d ts r : List Token}
    (h : (if d.isEmpty = true then none else stripPrefix? d ts) = some r) :
    d.isEmpty = false ∧ ts = d ++ r := by
  by_cases hd : d.isEmpty = true
  · rw [if_pos hd] at h
    cases h
  · rw [if_neg hd] at h
    have hd' : d.isEmpty = false := by
      cases hx : d.isEmpty
      · rfl
      · exact absurd hx hd
    exact ⟨hd', stripPrefix?_eq_some_iff.mp h⟩

theorem matchOpen_some {ts ts₁ : List Token} {k : BlockKind}
    (h : f.matchOpen ts = some (k, ts₁)) :
    (f.blockOpen k).isEmpty = false ∧ ts = f.blockOpen k ++ ts₁ := by
  unfold matchOpen stripOpen at h
  exact strip_if_some (findSome_pair
    (g := fun k' => if (f.blockOpen k').isEmpty = true then none else stripPrefix? (f.blockOpen k') ts)
    (k := k) h)

theorem matchHeader_some {ts ts₁ : List Token} {r : Role}
    (h : f.matchHeader ts = some (r, ts₁)) :
    (f.header r).isEmpty = false ∧ ts = f.header r ++ ts₁ := by
  unfold matchHeader stripOpen at h
  exact strip_if_some (findSome_pair
    (g := fun r' => if (f.header r').isEmpty = true then none else stripPrefix? (f.header r') ts)
    (k := r) h)

/-- A payload followed by a closer `d`: the input splits accordingly, and if the closer is
empty what follows is empty or led by a reserved token. -/
theorem close_step {res d ts rest : List Token}
    (h : stripPrefix? d (takeFree res ts).2 = some rest) :
    ts = (takeFree res ts).1 ++ (d ++ rest) ∧
    (d.isEmpty = true → ∀ t tl, rest = t :: tl → isReserved res t = true) := by
  have h2 := stripPrefix?_eq_some_iff.mp h
  refine ⟨by rw [← h2, takeFree_spec], fun hd t tl ht => ?_⟩
  rw [eq_nil_of_isEmpty hd, List.nil_append] at h2
  exact takeFree_rest_head (h2.trans ht)

/-! ## Blocks -/

theorem parseBody_ok {k : BlockKind} {ts rest : List Token} {b : Block (List Token)}
    (h : f.parseBody k ts = some (b, rest)) :
    (∀ i l, f.blockOpen k ++ ts = ids (f.renderBlock i l b) ++ rest) ∧
    b.kind = k ∧
    (f.hasKind k = true → (k = .plain → f.plainBare = true → (takeFree f.reserved ts).1 ≠ []) →
      f.blockOk b = true) ∧
    ((f.blockClose k).isEmpty = true → ∀ t tl, rest = t :: tl → isReserved f.reserved t = true) := by
  cases k with
  | plain =>
    simp only [parseBody] at h
    obtain ⟨r, hr, hb⟩ := map_some h
    simp only [Prod.mk.injEq] at hb
    obtain ⟨rfl, rfl⟩ := hb
    obtain ⟨hts, hcl⟩ := close_step hr
    refine ⟨fun i l => ?_, rfl, fun hk hne => ?_, hcl⟩
    · simp only [renderBlock, ids_append, ids_cellsOf, List.append_assoc]
      rw [← hts]
    · simp only [blockOk, hk, takeFree_free, Bool.true_and]
      cases hpb : f.plainBare with
      | false => rfl
      | true =>
        have hne' := hne rfl hpb
        cases hp : (takeFree f.reserved ts).1 with
        | nil => exact absurd hp hne'
        | cons _ _ => rfl
  | reasoning =>
    simp only [parseBody] at h
    obtain ⟨r, hr, hb⟩ := map_some h
    simp only [Prod.mk.injEq] at hb
    obtain ⟨rfl, rfl⟩ := hb
    obtain ⟨hts, hcl⟩ := close_step hr
    refine ⟨fun i l => ?_, rfl, fun hk _ => ?_, hcl⟩
    · simp only [renderBlock, ids_append, ids_cellsOf, List.append_assoc]
      rw [← hts]
    · simp [blockOk, hk, takeFree_free]
  | toolCall =>
    simp only [parseBody] at h
    by_cases hsep : f.toolSep.isEmpty = true
    · rw [if_pos hsep] at h
      obtain ⟨r, hr, hb⟩ := map_some h
      simp only [Prod.mk.injEq] at hb
      obtain ⟨rfl, rfl⟩ := hb
      obtain ⟨hts, hcl⟩ := close_step hr
      refine ⟨fun i l => ?_, rfl, fun hk _ => ?_, hcl⟩
      · simp only [renderBlock, ids_append, ids_cellsOf, List.append_assoc,
          eq_nil_of_isEmpty hsep, List.nil_append]
        rw [← hts]
      · simp [blockOk, hk, takeFree_free, allFree_nil]
    · rw [if_neg hsep] at h
      have hse : f.toolSep.isEmpty = false := by
        cases hx : f.toolSep.isEmpty
        · rfl
        · exact absurd hx hsep
      cases hsp : stripPrefix? f.toolSep (takeFree f.reserved ts).2 with
      | none => simp [hsp] at h
      | some ts' =>
        simp only [hsp] at h
        obtain ⟨r, hr, hb⟩ := map_some h
        simp only [Prod.mk.injEq] at hb
        obtain ⟨rfl, rfl⟩ := hb
        obtain ⟨hts', hcl⟩ := close_step hr
        have hts := stripPrefix?_eq_some_iff.mp hsp
        refine ⟨fun i l => ?_, rfl, fun hk _ => ?_, hcl⟩
        · simp only [renderBlock, ids_append, ids_cellsOf, List.append_assoc]
          rw [← hts', ← hts, takeFree_spec]
        · simp [blockOk, hk, takeFree_free, hse]

theorem parseBlocks_ok (n : Nat) :
    ∀ {ts rest : List Token} {bs : List (Block (List Token))},
      f.parseBlocks n ts = some (bs, rest) →
      (∀ i l, ts = ids (f.renderBlocks i l bs) ++ rest) ∧
      (∀ a : Bool, (a = true → ∀ t tl, ts = t :: tl → isReserved f.reserved t = true) →
        f.blocksOk a bs = true) := by
  induction n with
  | zero => intro ts rest bs h; simp [parseBlocks] at h
  | succ n ih =>
    intro ts rest bs h
    simp only [parseBlocks] at h
    rcases hm : f.matchOpen ts with _ | ⟨k, ts₁⟩
    · cases ts with
      | nil =>
        simp only [hm, Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl⟩ := h
        exact ⟨fun i l => by simp [renderBlocks, ids_nil], fun a _ => by simp [blocksOk]⟩
      | cons t tl =>
        simp only [hm] at h
        split at h
        · next hc =>
          have hc' : f.plainBare = true ∧ isReserved f.reserved t = false := by simpa using hc
          obtain ⟨hpb, htr⟩ := hc'
          rcases hb : f.parseBody .plain (t :: tl) with _ | ⟨b, ts₂⟩
          · simp [hb] at h
          · simp only [hb] at h
            rcases hr : f.parseBlocks n ts₂ with _ | ⟨bs', ts₃⟩
            · simp [hr] at h
            · simp only [hr, Option.some.injEq, Prod.mk.injEq] at h
              obtain ⟨rfl, rfl⟩ := h
              obtain ⟨hsound, hkind, hok, hcl⟩ := parseBody_ok f hb
              obtain ⟨ihs, ihv⟩ := ih hr
              have hopen : f.blockOpen .plain = [] := eq_nil_of_isEmpty hpb
              refine ⟨fun i l => ?_, fun a ha => ?_⟩
              · have h1 := hsound i l
                rw [hopen, List.nil_append] at h1
                rw [h1, ihs i l]
                simp only [renderBlocks, ids_append, List.append_assoc]
              · have hob : f.blockOk b = true :=
                  hok (by simp [hasKind]) (fun _ _ => by simp [takeFree_cons_free htr])
                have ha' : a = false := by
                  cases a with
                  | false => rfl
                  | true =>
                    have h2 := ha rfl t tl rfl
                    rw [htr] at h2
                    cases h2
                have hrest := ihv (f.openEnd b)
                  (fun ho t' tl' ht => hcl (by rw [← hkind]; exact ho) t' tl' ht)
                subst ha'
                simp only [blocksOk, hob, Bool.false_and, Bool.not_false, Bool.true_and, hrest]
        · next hc =>
          simp only [Option.some.injEq, Prod.mk.injEq] at h
          obtain ⟨rfl, rfl⟩ := h
          exact ⟨fun i l => by simp [renderBlocks, ids_nil], fun a _ => by simp [blocksOk]⟩
    · simp only [hm] at h
      obtain ⟨hne, hts⟩ := matchOpen_some f hm
      rcases hb : f.parseBody k ts₁ with _ | ⟨b, ts₂⟩
      · simp [hb] at h
      · simp only [hb] at h
        rcases hr : f.parseBlocks n ts₂ with _ | ⟨bs', ts₃⟩
        · simp [hr] at h
        · simp only [hr, Option.some.injEq, Prod.mk.injEq] at h
          obtain ⟨rfl, rfl⟩ := h
          obtain ⟨hsound, hkind, hok, hcl⟩ := parseBody_ok f hb
          obtain ⟨ihs, ihv⟩ := ih hr
          refine ⟨fun i l => ?_, fun a _ => ?_⟩
          · rw [hts, hsound i l, ihs i l]
            simp only [renderBlocks, ids_append, List.append_assoc]
          · have hk : f.hasKind k = true := by
              simp only [hasKind, hne, Bool.not_false, Bool.true_or]
            have hob : f.blockOk b = true := hok hk (fun hkp hpb => by
              subst hkp
              exact absurd (hne.symm.trans hpb) (by decide))
            have hos : f.openStart b = false := by
              cases b with
              | plain p =>
                simp only [Block.kind] at hkind
                subst hkind
                exact hne
              | reasoning p => rfl
              | toolCall nm ar => rfl
            have hrest := ihv (f.openEnd b)
              (fun ho t' tl' ht => hcl (by rw [← hkind]; exact ho) t' tl' ht)
            simp only [blocksOk, hob, hos, Bool.and_false, Bool.not_false, Bool.true_and, hrest]

/-! ## Messages -/

theorem parseMsg_ok {ts rest : List Token} {m : Message (List Token)}
    (h : f.parseMsg ts = some (m, rest)) :
    (∀ i, ts = ids (f.renderMsg i m) ++ rest) ∧ f.msgOk m = true := by
  simp only [parseMsg] at h
  rcases hm : f.matchHeader ts with _ | ⟨r, ts₁⟩
  · simp [hm] at h
  · simp only [hm] at h
    obtain ⟨hne, hts⟩ := matchHeader_some f hm
    rcases hb : f.parseBlocks (ts₁.length + 1) ts₁ with _ | ⟨bs, ts₂⟩
    · simp [hb] at h
    · simp only [hb] at h
      obtain ⟨rest', hf, hmr⟩ := map_some h
      simp only [Prod.mk.injEq] at hmr
      obtain ⟨rfl, rfl⟩ := hmr
      obtain ⟨hsound, hvalid⟩ := parseBlocks_ok f _ hb
      have hft := stripPrefix?_eq_some_iff.mp hf
      refine ⟨fun i => ?_, ?_⟩
      · rw [ids_renderMsg]
        simp only [List.append_assoc]
        rw [← hft, ← hsound, hts]
      · simp only [msgOk, supports, hne, Bool.not_false, Bool.true_and]
        exact hvalid false (fun h => by cases h)

theorem parseMsgs_ok (n : Nat) :
    ∀ {ts : List Token} {ms : List (Message (List Token))} {g : Bool},
      f.parseMsgs n ts = some (ms, g) →
      (∀ i, ts = ids (f.renderMsgs i ms) ++ (if g then f.header .assistant else [])) ∧
      ms.all f.msgOk = true := by
  induction n with
  | zero => intro ts ms g h; simp [parseMsgs] at h
  | succ n ih =>
    intro ts ms g h
    simp only [parseMsgs] at h
    by_cases he : ts.isEmpty = true
    · rw [if_pos he] at h
      simp only [Option.some.injEq, Prod.mk.injEq] at h
      obtain ⟨rfl, rfl⟩ := h
      refine ⟨fun i => ?_, rfl⟩
      rw [eq_nil_of_isEmpty he]
      simp [renderMsgs, ids_nil]
    · rw [if_neg he] at h
      by_cases ha : (ts == f.header .assistant) = true
      · rw [if_pos ha] at h
        simp only [Option.some.injEq, Prod.mk.injEq] at h
        obtain ⟨rfl, rfl⟩ := h
        refine ⟨fun i => ?_, rfl⟩
        rw [beq_iff_eq.mp ha]
        simp [renderMsgs, ids_nil]
      · rw [if_neg ha] at h
        rcases hm : f.parseMsg ts with _ | ⟨m, rest⟩
        · simp [hm] at h
        · simp only [hm] at h
          rcases hr : f.parseMsgs n rest with _ | ⟨ms', g'⟩
          · simp [hr] at h
          · simp only [hr, Option.some.injEq, Prod.mk.injEq] at h
            obtain ⟨rfl, rfl⟩ := h
            obtain ⟨hs, hv⟩ := parseMsg_ok f hm
            obtain ⟨ihs, ihv⟩ := ih hr
            refine ⟨fun i => ?_, ?_⟩
            · rw [hs i, ihs (i + 1)]
              simp only [renderMsgs, ids_append, List.append_assoc]
            · simp only [List.all_cons, hv, ihv, Bool.true_and]

end ParseSound

/-! ## Main theorems -/

/-- Soundness of the parser: if `parse` accepts a token list and returns a conversation, then
rendering that conversation gives back exactly the same token ids. The parser never invents,
drops or reorders tokens, so a parsed rollout can be re-rendered (with its loss mask) without
changing what the model saw. -/
theorem render_parse (f : EncFormat) (ts : List Token) (c : Conversation (List Token))
    (h : f.parse ts = some c) : ids (f.renderTok c) = ts := by
  simp only [parse] at h
  rcases hb : stripPrefix? f.bos ts with _ | ts₁
  · simp [hb] at h
  · simp only [hb] at h
    obtain ⟨⟨ms, g⟩, hp, hc⟩ := map_some h
    subst hc
    have hts := stripPrefix?_eq_some_iff.mp hb
    obtain ⟨hs, _⟩ := parseMsgs_ok f _ hp
    rw [hts, hs 0]
    cases g <;> simp [renderTok, renderPrompt, ids_append, ids_cellsOf, ids_nil]

/-- The parser only returns valid conversations: every payload is free of reserved tokens,
no bare plain block follows a block without closer (their payloads would merge), bare plain
blocks are non-empty, tool names only appear when the format can separate them, and every
role and block kind is supported by the format. So anything the parser accepts satisfies the
hypothesis of the round-trip theorems. -/
theorem parse_valid (f : EncFormat) (ts : List Token) (c : Conversation (List Token))
    (h : f.parse ts = some c) : f.Valid c := by
  simp only [parse] at h
  rcases hb : stripPrefix? f.bos ts with _ | ts₁
  · simp [hb] at h
  · simp only [hb] at h
    obtain ⟨⟨ms, g⟩, hp, hc⟩ := map_some h
    subst hc
    exact (parseMsgs_ok f _ hp).2

/-! ## Decoding -/

namespace ParseSound

theorem toTokens_decodePayload (codec : Codec) (ts : List Token) :
    (decodePayload codec ts).toTokens codec = ts := by
  simp only [decodePayload]
  split
  · split
    · next h => simpa [Payload.toTokens] using h
    · rfl
  · rfl

theorem block_map_map_id {α β : Type} {f : α → β} {g : β → α} (h : ∀ x, g (f x) = x)
    (b : Block α) : (b.map f).map g = b := by
  cases b <;> simp [Block.map, h]

theorem list_map_map_id {α β : Type} {f : α → β} {g : β → α} (h : ∀ x, g (f x) = x)
    (l : List α) : (l.map f).map g = l := by
  induction l with
  | nil => rfl
  | cons x xs ih => simp only [List.map_cons, h, ih]

theorem conversation_map_map_id {α β : Type} {f : α → β} {g : β → α} (h : ∀ x, g (f x) = x)
    (c : Conversation α) : (c.map f).map g = c := by
  have hm : ∀ m : Message α, (m.map f).map g = m := by
    intro m
    cases m with
    | mk r bs => simp only [Message.map,
      list_map_map_id (f := Block.map f) (g := Block.map g) (block_map_map_id h)]
  cases c with
  | mk ms a => simp only [Conversation.map, list_map_map_id (f := Message.map f) (g := Message.map g) hm]

end ParseSound

/-- Decoding never loses information: turning a parsed token-level conversation into text
payloads (where the text re-encodes exactly) and encoding it again gives back the very same
tokens. Training on a decoded conversation therefore trains on exactly the parsed tokens. -/
theorem toTokens_decode (codec : Codec) (c : Conversation (List Token)) :
    (c.decode codec).toTokens codec = c :=
  conversation_map_map_id (f := decodePayload codec) (g := Payload.toTokens codec)
    (toTokens_decodePayload codec) c

end Verified

end
