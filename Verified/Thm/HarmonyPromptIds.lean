module

public import Verified.Thm.HarmonyPrefix

public section

/-!
# gpt-oss: the generation prompt's render is a prefix of its extensions', token for token

`extension_keeps` (`Thm/HarmonyPrefix.lean`) states the prefix property for layouts: the
layout of a conversation with the generation prompt `<|start|>assistant` is a prefix of the
layout of the conversation followed by an assistant message and more, when the appended
messages keep history (`KeepsHistory`). Here the same for renders (`encodeItems`: ids, mask
and owners, cell for cell), split by the first turn the new message is written as:

* `extension_ids_channel`: the first turn continues the prompt with a control token (an
  analysis or final turn continues with `<|channel|>`; a sampled turn with its own tokens).
  The prompt's `assistant` span is closed by that token, so the prefix holds for every codec.
* `extension_ids_call`: the first turn is a call, whose header text ` to=functions.NAME`
  follows the prompt's `assistant` text with no token between: the two are one span
  (`<|start|>assistant to=functions.NAME<|channel|>`), encoded whole. The prefix holds for
  every lawful codec that splits that span before the space and encodes `assistant` to tokens
  with bytes (`SplitsCallHeader`): then the tokens of `assistant` take the prompt's
  annotations (owner the new message, not learned) in both renders, and the tokens of
  ` to=functions.NAME` follow, learned. o200k_harmony splits there (its pre-tokenizer ends a
  word before a space); `tests/test_harmony.py::test_o200k_splits_before_the_call_header`
  checks the hypothesis on every tool name of the parity corpus and on adversarial names.
* `extension_ids`: both together, for any appended assistant message and a codec that splits.
* `extension_ids_final`: a message without a tool call block (a final answer, a sampled turn)
  never starts with a call turn (`lowerAsst_no_call`), so in the stable format the prefix holds
  for it with every codec (in the exact format a final answer can rewrite history).

A codec that merges across the seam (a token spanning `t to`) breaks the call case: the
prompt render ends with a token that the extension's render does not have.
-/

namespace Verified.Harmony

open Verified

/-- A call turn. -/
@[expose] def HTurn.isCall : HTurn → Bool
  | .call .. => true
  | _ => false

/-- A codec splits the span `assistant to=functions.NAME` before the space: the encoding of
the span is the encoding of `assistant` followed by that of ` to=functions.NAME`, and no token
of `assistant` decodes to no bytes (so the tokens of `assistant` cover exactly its bytes). -/
structure SplitsCallHeader (c : Codec) : Prop where
  /-- The span encodes as its two parts. -/
  split : ∀ s : Chars,
    c.encodeRun (asstRole ++ toFunctions ++ s) = c.encodeRun asstRole ++ c.encodeRun (toFunctions ++ s)
  /-- Every token of `assistant` has bytes. -/
  bytes_ne_nil : ∀ t ∈ c.encodeRun asstRole, c.bytes t ≠ []

/-! ## Spans: the cells of a span that a codec splits -/

theorem chars_cons (x : Sym) (l : List Sym) : chars (x :: l) = chars [x] ++ chars l := by
  cases x <;> rfl

/-- One annotation per byte. -/
theorem length_byteAnns (run : List (Sym × Ann)) :
    (byteAnns run).length = (utf8 (chars (run.map Prod.fst))).length := by
  induction run with
  | nil => rfl
  | cons x run ih =>
    rw [List.map_cons, chars_cons, utf8_append, List.length_append, ← ih]
    simp only [byteAnns, List.flatMap_cons, List.length_append, List.length_map]

theorem byteAnns_append (a b : List (Sym × Ann)) :
    byteAnns (a ++ b) = byteAnns a ++ byteAnns b := by
  simp [byteAnns, List.flatMap_append]

/-- A lawful codec's encoding of a span decodes to its bytes. -/
theorem Codec.flatMap_bytes_encodeRun {c : Codec} {res : List Token} (hc : c.Lawful res)
    (cs : Chars) : (c.encodeRun cs).flatMap c.bytes = utf8 cs := by
  unfold Codec.encodeRun
  split
  · rename_i h
    rw [List.isEmpty_iff.mp h]
    rfl
  · exact hc.decode_encode cs

/-- `assign` of two token lists, the first covering exactly the first annotations with tokens
that all have bytes: each part is assigned its own annotations. -/
theorem assign_append (bytes : Token → List UInt8) (us : List Token) (ms' : List Ann)
    (d d' : Ann) : ∀ (ts : List Token) (ms : List Ann), (∀ t ∈ ts, bytes t ≠ []) →
      (ts.flatMap bytes).length = ms.length →
      assign bytes (ts ++ us) (ms ++ ms') d = assign bytes ts ms d' ++ assign bytes us ms' d
  | [], ms, _, h => by
    have e : ms = [] := List.eq_nil_of_length_eq_zero (by simpa using h.symm)
    subst e
    rfl
  | t :: ts, ms, hne, h => by
    have hk : (bytes t).length ≤ ms.length := by
      rw [← h, List.flatMap_cons, List.length_append]
      omega
    cases ms with
    | nil =>
      exact absurd (List.eq_nil_of_length_eq_zero (Nat.le_zero.mp hk)) (hne t List.mem_cons_self)
    | cons m ms0 =>
      have ih := assign_append bytes us ms' d d' ts ((m :: ms0).drop (bytes t).length)
        (fun x hx => hne x (List.mem_cons_of_mem _ hx))
        (by
          rw [List.length_drop, ← h, List.flatMap_cons, List.length_append]
          omega)
      rw [List.cons_append]
      simp only [assign]
      rw [List.drop_append_of_le_length hk, ih]
      rfl

/-- The cells of a span that the codec encodes as its two parts: the cells of each part, the
first part's annotated by its own bytes. -/
theorem encodeRunCells_append {c : Codec} {res : List Token} (hc : c.Lawful res)
    (ra rb : List (Sym × Ann))
    (hs : c.encodeRun (chars ((ra ++ rb).map Prod.fst)) =
      c.encodeRun (chars (ra.map Prod.fst)) ++ c.encodeRun (chars (rb.map Prod.fst)))
    (hne : ∀ t ∈ c.encodeRun (chars (ra.map Prod.fst)), c.bytes t ≠ []) (hb : rb ≠ []) :
    encodeRunCells c (ra ++ rb) = encodeRunCells c ra ++ encodeRunCells c rb := by
  have hlen : ((c.encodeRun (chars (ra.map Prod.fst))).flatMap c.bytes).length =
      (byteAnns ra).length := by
    rw [length_byteAnns, Codec.flatMap_bytes_encodeRun hc]
  have hd : (ra ++ rb).getLast? = rb.getLast? := by
    rw [List.getLast?_append]
    cases rb with
    | nil => exact absurd rfl hb
    | cons x xs => rfl
  unfold encodeRunCells
  rw [hs, hd, byteAnns_append]
  exact assign_append _ _ _ _ _ _ _ hne hlen

/-! ## Items -/

theorem asyms_txt (cs : Chars) (o : Nat) (l : Bool) :
    asyms [txt cs o l] = cs.map fun ch => (Sym.ch ch, (⟨o, l⟩ : Ann)) := by
  simp [asyms, txt, Piece.syms, Function.comp_def]

theorem isCh_asyms_txt (cs : Chars) (o : Nat) (l : Bool) :
    ∀ z ∈ asyms [txt cs o l], z.1.isCh = true := by
  rw [asyms_txt]
  intro z hz
  obtain ⟨_, _, rfl⟩ := List.mem_map.mp hz
  rfl

theorem chars_asyms_txt (cs : Chars) (o : Nat) (l : Bool) :
    chars ((asyms [txt cs o l]).map Prod.fst) = cs := by
  rw [asyms_map_fst, show syms [txt cs o l] = lit cs by simp [syms, txt, Piece.syms, lit],
    chars_lit]

/-- A control item followed by text: one cell, then the span of the text. -/
theorem encodeItems_ctl_cons (c : Codec) (t : Token) (a : Ann) (ys : List Item)
    (h : ∀ z ∈ asyms ys, z.1.isCh = true) :
    encodeItems c (⟨.ctrl t, a⟩ :: ys) =
      ⟨t, .ctrl, a.owner, a.learn⟩ :: encodeRunCells c (asyms ys) := by
  have h' : ∀ z ∈ asyms ys, (fun x : Sym × Ann => !x.1.isCh) z = false :=
    fun z hz => by simp [h z hz]
  simp only [encodeItems, asyms_cons, Piece.syms, List.map_cons, List.map_nil,
    List.cons_append, List.nil_append]
  rw [splitBy_cons_of_true _ _ _ rfl, splitBy_of_false _ _ h']
  simp [encodeRunCells_nil, Sym.token, Sym.src]

/-- The prompt followed by a call header, with a codec that splits it: the prompt's cells,
then the header's. -/
theorem encodeItems_call_head {c : Codec} {res : List Token} (hc : c.Lawful res)
    (hsp : SplitsCallHeader c) (s : Token) (o : Nat) (n : Chars) :
    encodeItems c [ctl s o false, txt asstRole o false, txt (toFunctions ++ n) o true] =
      encodeItems c [ctl s o false, txt asstRole o false] ++
        encodeRunCells c (asyms [txt (toFunctions ++ n) o true]) := by
  have e : [txt asstRole o false, txt (toFunctions ++ n) o true] =
      [txt asstRole o false] ++ [txt (toFunctions ++ n) o true] := rfl
  have hAB : ∀ z ∈ asyms [txt asstRole o false, txt (toFunctions ++ n) o true],
      z.1.isCh = true := by
    rw [e, asyms_append]
    intro z hz
    rcases List.mem_append.mp hz with hz | hz
    · exact isCh_asyms_txt _ _ _ z hz
    · exact isCh_asyms_txt _ _ _ z hz
  have hs : c.encodeRun (chars ((asyms [txt asstRole o false] ++
      asyms [txt (toFunctions ++ n) o true]).map Prod.fst)) =
      c.encodeRun (chars ((asyms [txt asstRole o false]).map Prod.fst)) ++
        c.encodeRun (chars ((asyms [txt (toFunctions ++ n) o true]).map Prod.fst)) := by
    rw [← asyms_append, ← e, asyms_map_fst,
      show syms [txt asstRole o false, txt (toFunctions ++ n) o true] =
        lit (asstRole ++ (toFunctions ++ n)) by simp [syms, txt, Piece.syms, lit],
      chars_lit, chars_asyms_txt, chars_asyms_txt]
    exact hsp.split n
  have hne : ∀ t ∈ c.encodeRun (chars ((asyms [txt asstRole o false]).map Prod.fst)),
      c.bytes t ≠ [] := by
    rw [chars_asyms_txt]
    exact hsp.bytes_ne_nil
  have hb : asyms [txt (toFunctions ++ n) o true] ≠ [] := by
    simp [asyms_txt, toFunctions]
  simp only [ctl]
  rw [encodeItems_ctl_cons _ _ _ _ hAB, encodeItems_ctl_cons _ _ _ _ (isCh_asyms_txt _ _ _), e,
    asyms_append, encodeRunCells_append hc _ _ hs hne hb, List.cons_append]

variable (f : HarmonyFmt)

/-- Every turn starts with `<|start|>`. -/
theorem turnItems_start (t : HTurn) :
    ∃ o rest, turnItems f t = ctl f.ids.start o false :: rest := by
  cases t <;> exact ⟨_, _, rfl⟩

/-- What follows the first turn of an appended message (later turns, the prompt) starts with
a control token, or is empty. -/
theorem head_rest (us : List HTurn) (p : Option Nat) :
    ∀ x ∈ (syms (us.flatMap (turnItems f) ++ p.elim [] (promptItems f))).head?,
      x.isCh = false := by
  intro x hx
  cases us with
  | nil =>
    cases p with
    | none => simp at hx
    | some o =>
      simp [promptItems, head, ctl, Piece.syms] at hx
      subst hx
      rfl
  | cons u us =>
    obtain ⟨o, rest, e⟩ := turnItems_start f u
    rw [List.flatMap_cons, e] at hx
    simp [ctl, Piece.syms] at hx
    subst hx
    rfl

/-- A first turn that continues the prompt with a control token (or its own tokens): the
prompt's render is a prefix, for every codec. -/
theorem render_prefix_channel (c : Codec) (X R : List Item) {o : Nat} {t : HTurn}
    (ht : asstAt o t) (hc : t.isCall = false) (hR : ∀ x ∈ (syms R).head?, x.isCh = false) :
    encodeItems c (X ++ promptItems f o) <+: encodeItems c (X ++ (turnItems f t ++ R)) := by
  obtain ⟨T, e, hT⟩ : ∃ T, turnItems f t = promptItems f o ++ T ∧
      ∀ x ∈ (syms (T ++ R)).head?, x.isCh = false := by
    cases t with
    | analysis p o' =>
      subst ht
      refine ⟨chan f analysisCh o' true ++ body f p f.ids.endT o' true,
        by simp [turnItems, promptItems], ?_⟩
      intro x hx
      simp [chan, ctl, Piece.syms] at hx
      subst hx
      rfl
    | final p r o' =>
      subst ht
      refine ⟨chan f finalCh o' true ++ body f p (if r then f.ids.ret else f.ids.endT) o' true,
        by simp [turnItems, promptItems], ?_⟩
      intro x hx
      simp [chan, ctl, Piece.syms] at hx
      subst hx
      rfl
    | sampled ts o' =>
      subst ht
      refine ⟨[⟨.toks ts, ⟨o', true⟩⟩], rfl, ?_⟩
      intro x hx
      cases ts with
      | nil => exact hR x (by simpa [Piece.syms] using hx)
      | cons u us =>
        simp [Piece.syms] at hx
        subst hx
        rfl
    | call => cases hc
    | dev => cases ht
    | user => cases ht
    | result => cases ht
  rw [e, List.append_assoc, ← List.append_assoc X, encodeItems_append c _ _ hT]
  exact List.prefix_append _ _

/-- A first turn that is a call, with a codec that splits its header from the prompt: the
prompt's render is a prefix. -/
theorem render_prefix_call {c : Codec} {res : List Token} (hc : c.Lawful res)
    (hsp : SplitsCallHeader c) (X R : List Item) (n a : Chars) (o : Nat)
    (hR : ∀ x ∈ (syms R).head?, x.isCh = false) :
    encodeItems c (X ++ promptItems f o) <+:
      encodeItems c (X ++ (turnItems f (.call n a o) ++ R)) := by
  have e : turnItems f (.call n a o) ++ R =
      [ctl f.ids.start o false, txt asstRole o false, txt (toFunctions ++ n) o true] ++
        (chan f callCh o true ++ body f (.text a) f.ids.call o true ++ R) := by
    simp [turnItems, head]
  have h1 : ∀ x ∈ (syms (chan f callCh o true ++ body f (.text a) f.ids.call o true ++ R)).head?,
      x.isCh = false := by
    intro x hx
    simp [chan, ctl, Piece.syms] at hx
    subst hx
    rfl
  have h0 : ∀ x ∈ (syms ([ctl f.ids.start o false, txt asstRole o false,
      txt (toFunctions ++ n) o true] ++
        (chan f callCh o true ++ body f (.text a) f.ids.call o true ++ R))).head?,
      x.isCh = false := by
    intro x hx
    simp [ctl, Piece.syms] at hx
    subst hx
    rfl
  have h2 : ∀ x ∈ (syms (promptItems f o)).head?, x.isCh = false := by
    intro x hx
    simp [promptItems, head, ctl, Piece.syms] at hx
    subst hx
    rfl
  rw [e, encodeItems_append c X _ h0, encodeItems_append c _ _ h1,
    encodeItems_append c X _ h2, encodeItems_call_head hc hsp]
  simp only [promptItems, head]
  exact ⟨encodeRunCells c (asyms [txt (toFunctions ++ n) o true]) ++
    encodeItems c (chan f callCh o true ++ body f (.text a) f.ids.call o true ++ R),
    by simp only [List.append_assoc]⟩

/-! ## Conversations -/

/-- The layouts of a conversation with the prompt and of an extension that keeps history,
split at the prompt: the shared part, the prompt, the first turn of the new message, and what
follows it. -/
theorem extension_split (ms ns : List Message) (m : Message) (hm : m.role = .assistant)
    (hk : KeepsHistory f (m :: ns)) (tools : Option (List Json)) (g : Bool) (hms : ms ≠ [])
    (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    ∃ X R t r, lowerAsst f ms.length m ns (ns.isEmpty && !g) = some r ∧ r.1.head? = some t ∧
      asstAt ms.length t ∧ (∀ x ∈ (syms R).head?, x.isCh = false) ∧
      layout f l = X ++ promptItems f ms.length ∧ layout f l' = X ++ (turnItems f t ++ R) := by
  obtain ⟨role, bs⟩ := m
  simp only at hm
  subst hm
  obtain ⟨r, ts3, ha, -, hp, e⟩ := extension_lower f ms ns bs hk tools g hms l l' hl hl'
  obtain ⟨t, tl, hr1, hat⟩ := lowerAsst_turns ha
  obtain ⟨s, ts, p⟩ := l
  simp only at hp e
  subst hp e
  refine ⟨layout f ⟨s, ts, none⟩, (tl ++ ts3).flatMap (turnItems f) ++
      (if g then some (ms ++ ⟨.assistant, bs⟩ :: ns).length else none).elim [] (promptItems f),
    t, r, ha, by rw [hr1]; rfl, hat, head_rest f _ _, layout_some f _ _ _, ?_⟩
  rw [layout_append_turns, hr1, List.cons_append, List.flatMap_cons, List.append_assoc]

/-- The token-level prefix property, for every codec, when the new assistant message's first
turn is not a call (an analysis or final turn continues the prompt with `<|channel|>`, a sampled
turn with its own tokens): under `KeepsHistory`, the render of the conversation with the
generation prompt (ids, provenance, owners, loss bits) is a prefix of the render of the
extension. -/
theorem extension_ids_channel (codec : Codec) (ms ns : List Message) (m : Message)
    (hm : m.role = .assistant) (hk : KeepsHistory f (m :: ns)) (tools : Option (List Json))
    (g : Bool) (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l')
    (hfirst : ∀ r, lowerAsst f ms.length m ns (ns.isEmpty && !g) = some r →
      ∀ t ∈ r.1.head?, t.isCall = false) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨X, R, t, r, ha, hh, hat, hR, e, e'⟩ :=
    extension_split f ms ns m hm hk tools g hms l l' hl hl'
  rw [e, e']
  exact render_prefix_channel f codec X R hat (hfirst r ha t hh) hR

/-- The token-level prefix property when the new assistant message's first turn is a call
(` to=functions.NAME` right after the prompt's `assistant`, in one span): under `KeepsHistory`,
for every lawful codec that splits that span before the space (`SplitsCallHeader`), the render
of the conversation with the generation prompt is a prefix of the render of the extension. -/
theorem extension_ids_call (codec : Codec) {res : List Token} (hc : codec.Lawful res)
    (hsp : SplitsCallHeader codec) (ms ns : List Message) (m : Message)
    (hm : m.role = .assistant) (hk : KeepsHistory f (m :: ns)) (tools : Option (List Json))
    (g : Bool) (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l')
    (hfirst : ∀ r, lowerAsst f ms.length m ns (ns.isEmpty && !g) = some r →
      ∀ t ∈ r.1.head?, t.isCall = true) :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨X, R, t, r, ha, hh, hat, hR, e, e'⟩ :=
    extension_split f ms ns m hm hk tools g hms l l' hl hl'
  rw [e, e']
  cases t with
  | call n a o =>
    cases hat
    exact render_prefix_call f hc hsp X R n a _ hR
  | _ => cases hfirst r ha _ hh

/-- The token-level prefix property of the generation prompt for any appended assistant
message: under `KeepsHistory` (stable format, or no appended final answer), for every lawful
codec that splits `assistant to=functions.NAME` before the space (o200k_harmony does), the
render of the conversation with the generation prompt (ids, provenance, owners, loss bits) is a
prefix of the render of the extension. -/
theorem extension_ids (codec : Codec) {res : List Token} (hc : codec.Lawful res)
    (hsp : SplitsCallHeader codec) (ms ns : List Message) (m : Message)
    (hm : m.role = .assistant) (hk : KeepsHistory f (m :: ns)) (tools : Option (List Json))
    (g : Bool) (hms : ms ≠ []) (l l' : HConv) (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨X, R, t, r, ha, hh, hat, hR, e, e'⟩ :=
    extension_split f ms ns m hm hk tools g hms l l' hl hl'
  rw [e, e']
  cases hct : t.isCall with
  | false => exact render_prefix_channel f codec X R hat hct hR
  | true =>
    cases t with
    | call n a o =>
      cases hat
      exact render_prefix_call f hc hsp X R n a _ hR
    | _ => cases hct

/-! ## Messages without a tool call -/

/-- A tool call block. -/
@[expose] def callBlock : Block → Bool
  | .toolCall .. => true
  | _ => false

/-- Without a tool call block, `asmBlocks` collects no call. -/
theorem asmBlocks_no_call : ∀ (bs : List Block) (th co : Option LPay) (cs : List (Chars × Chars))
    (x : Option LPay × Option LPay × List (Chars × Chars)),
    asmBlocks th co cs bs = some x → (∀ b ∈ bs, callBlock b = false) → x.2.2 = cs
  | [], th, co, cs, x, h, _ => by
    simp only [asmBlocks, Option.some.injEq] at h
    subst h
    rfl
  | b :: bs, th, co, cs, x, h, hb => by
    have hb1 : callBlock b = false := hb b List.mem_cons_self
    have hb2 : ∀ y ∈ bs, callBlock y = false := fun y hy => hb y (List.mem_cons_of_mem _ hy)
    cases b with
    | toolCall n a id => cases hb1
    | reasoning p =>
      cases th <;> cases co <;> cases cs <;>
        first
        | exact asmBlocks_no_call bs (some p.lower) none [] x h hb2
        | cases h
        | simp [asmBlocks] at h
    | plain p =>
      cases co <;> cases cs <;>
        first
        | exact asmBlocks_no_call bs th (some p.lower) [] x h hb2
        | cases h
        | simp [asmBlocks] at h
    | sampled ts =>
      first
      | cases h
      | simp [asmBlocks] at h

/-- An assistant message without a tool call is written as analysis turns and a final turn,
or as a sampled turn: no call turn. -/
theorem lowerAsst_no_call {f : HarmonyFmt} {i : Nat} {m : Message} {later : List Message}
    {last : Bool} {r : List HTurn × Option Chars}
    (hf : ∀ b ∈ m.blocks, callBlock b = false) (h : lowerAsst f i m later last = some r) : ∀ t ∈ r.1, t.isCall = false := by
  unfold lowerAsst at h
  split at h
  · simp only [Option.some.injEq] at h
    subst h
    intro t ht
    simp only [List.mem_singleton] at ht
    subst ht
    rfl
  · cases hb : asmBlocks none none [] m.blocks with
    | none => simp [hb] at h
    | some x =>
      obtain ⟨th, co, cs⟩ := x
      have hcs : cs = [] := asmBlocks_no_call _ _ _ _ _ hb hf
      subst hcs
      simp only [hb, Option.bind_some, Option.some.injEq] at h
      subst h
      intro t ht
      simp only [List.mem_append, List.mem_singleton] at ht
      rcases ht with ht | rfl
      · split at ht
        · obtain ⟨p, -, rfl⟩ := List.mem_map.mp ht
          rfl
        · cases ht
      · rfl

/-- The token-level prefix property for an appended message without a tool call block (a
final answer, a sampled turn), stable format: for every codec, the render of the conversation
with the generation prompt is a prefix of the render of the extension. (In the exact format an
appended final answer can rewrite history, `extension_exact`.) -/
theorem extension_ids_final (hs : f.mode = .stable) (codec : Codec) (ms ns : List Message)
    (m : Message) (hm : m.role = .assistant) (hnc : ∀ b ∈ m.blocks, callBlock b = false)
    (tools : Option (List Json)) (g : Bool) (hms : ms ≠ []) (l l' : HConv)
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ m :: ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') :=
  extension_ids_channel f codec ms ns m hm (Or.inl hs) tools g hms l l' hl hl'
    fun _ ha t ht => lowerAsst_no_call hnc ha t (List.mem_of_mem_head? ht)

end Verified.Harmony

end
