module

public import Verified.Spec.Render
public import Verified.Thm.Message

public section

/-!
# Properties of the render

What an RL pipeline gets from the render function:

1. **Prefix stability** (`render_append`, `render_prefix`, `render_prefix_text`): rendering
   more messages only appends cells; the cells of the earlier messages never change, in any of
   the three aligned arrays (`ids`, `mask`, `owners`).
2. **Inference/training agreement** (`prompt_prefix`, `prompt_prefix_text`): the generation
   prompt, followed by the sampled tokens and the end of turn, is exactly the render of the
   conversation with that assistant message appended.
3. **Loss mask** (`mask_spec`, `mask_spec_text`): the mask bit is set exactly on the tokens the
   model produced in an assistant turn; `owner_le` bounds the owner indices.
4. **No forgery** (`no_forgery`, `control_skeleton`): with a lawful codec, text payloads never
   produce reserved tokens, and the sequence of reserved (control) cells depends only on the
   shape of the conversation (roles and block kinds), never on its text.
-/

namespace Verified

open Format

/-! ## Projections and basic cell lemmas -/

@[simp] theorem ids_append (a b : List Cell) : ids (a ++ b) = ids a ++ ids b := by
  simp [ids]

@[simp] theorem mask_append (a b : List Cell) : mask (a ++ b) = mask a ++ mask b := by
  simp [mask]

@[simp] theorem owners_append (a b : List Cell) : owners (a ++ b) = owners a ++ owners b := by
  simp [owners]

@[simp] theorem ids_nil : ids [] = [] := rfl

@[simp] theorem ids_cellsOf (s : Src) (i : Nat) (l : Bool) (ts : List Token) :
    ids (cellsOf s i l ts) = ts := by
  induction ts with
  | nil => rfl
  | cons t ts ih => exact congrArg (List.cons t) ih

@[simp] theorem ids_renderFooter (f : EncFormat) (i : Nat) (l : Bool) (ts : List Token) :
    ids (f.renderFooter i l ts) = ts := by
  cases ts with
  | nil => rfl
  | cons t ts => exact congrArg (List.cons t) (ids_cellsOf .footer i l ts)

@[simp] theorem ids_renderPrompt (f : EncFormat) (n : Nat) :
    ids (f.renderPrompt n) = f.header .assistant := by
  simp [renderPrompt]

theorem mem_cellsOf {x : Cell} {s : Src} {i : Nat} {l : Bool} {ts : List Token} :
    x ∈ cellsOf s i l ts ↔ ∃ t ∈ ts, x = ⟨t, s, i, l && s.learned⟩ := by
  simp only [cellsOf, List.mem_map]
  constructor
  · rintro ⟨t, ht, rfl⟩
    exact ⟨t, ht, rfl⟩
  · rintro ⟨t, ht, rfl⟩
    exact ⟨t, ht, rfl⟩

theorem lt_length_of_getElem?_eq_some {α : Type} {l : List α} {i : Nat} {a : α}
    (h : l[i]? = some a) : i < l.length := by
  induction l generalizing i with
  | nil => simp at h
  | cons b l ih =>
    cases i with
    | zero => simp
    | succ i =>
      simp only [List.getElem?_cons_succ] at h
      have := ih (i := i) h
      simp only [List.length_cons]
      omega

/-! ## Prefix stability -/

/-- Rendering a concatenation of message lists is rendering each part, the second numbered
after the first: the cells of earlier messages never depend on later ones. -/
theorem renderMsgs_append (f : EncFormat) (i : Nat) (ms ns : List (Message (List Token))) :
    f.renderMsgs i (ms ++ ns) = f.renderMsgs i ms ++ f.renderMsgs (i + ms.length) ns := by
  induction ms generalizing i with
  | nil => simp [renderMsgs]
  | cons m ms ih =>
    simp only [List.cons_append, renderMsgs, ih, List.append_assoc, List.length_cons]
    have : i + 1 + ms.length = i + (ms.length + 1) := by omega
    rw [this]

/-- The render of `ms ++ ns` is the render of `ms` (without generation prompt), then the
cells of the messages `ns` (numbered from `ms.length`), then the generation prompt if asked
for: appending turns to a conversation never rewrites history. -/
theorem render_append (f : EncFormat) (ms ns : List (Message (List Token))) (g : Bool) :
    f.renderTok ⟨ms ++ ns, g⟩ = f.renderTok ⟨ms, false⟩ ++ f.renderMsgs ms.length ns ++
      (if g then f.renderPrompt (ms.length + ns.length) else []) := by
  first
    | simp [renderTok, renderMsgs_append, List.append_assoc]
    | simp only [renderTok, renderMsgs_append, Nat.zero_add, List.length_append,
        List.append_assoc, Bool.false_eq_true, ↓reduceIte, List.append_nil]

/-- The token ids of a render split like the render (`render_append`). -/
theorem ids_render_append (f : EncFormat) (ms ns : List (Message (List Token))) (g : Bool) :
    ids (f.renderTok ⟨ms ++ ns, g⟩) = ids (f.renderTok ⟨ms, false⟩) ++
      ids (f.renderMsgs ms.length ns) ++
      ids (if g then f.renderPrompt (ms.length + ns.length) else []) := by
  simp only [render_append, ids_append]

/-- The loss mask of a render splits like the render (`render_append`). -/
theorem mask_render_append (f : EncFormat) (ms ns : List (Message (List Token))) (g : Bool) :
    mask (f.renderTok ⟨ms ++ ns, g⟩) = mask (f.renderTok ⟨ms, false⟩) ++
      mask (f.renderMsgs ms.length ns) ++
      mask (if g then f.renderPrompt (ms.length + ns.length) else []) := by
  simp only [render_append, mask_append]

/-- The owner indices of a render split like the render (`render_append`). -/
theorem owners_render_append (f : EncFormat) (ms ns : List (Message (List Token))) (g : Bool) :
    owners (f.renderTok ⟨ms ++ ns, g⟩) = owners (f.renderTok ⟨ms, false⟩) ++
      owners (f.renderMsgs ms.length ns) ++
      owners (if g then f.renderPrompt (ms.length + ns.length) else []) := by
  simp only [render_append, owners_append]

/-- Prefix stability: the render of a conversation (without generation prompt) is a prefix
of the render of any extension of it, so cached prefixes (KV cache, earlier training
sequences) stay valid as turns are added. -/
theorem render_prefix (f : EncFormat) (ms ns : List (Message (List Token))) (g : Bool) :
    f.renderTok ⟨ms, false⟩ <+: f.renderTok ⟨ms ++ ns, g⟩ := by
  rw [render_append, List.append_assoc]
  exact List.prefix_append _ _

/-- Prefix stability at the string level: encoding text payloads with the codec keeps the
render of a conversation a prefix of the render of any extension of it. -/
theorem render_prefix_text (fmt : ChatFormat) (codec : Codec) (ms ns : List (Message Payload))
    (g : Bool) : render fmt codec ⟨ms, false⟩ <+: render fmt codec ⟨ms ++ ns, g⟩ := by
  have h := render_prefix (fmt.encode codec) (ms.map (Message.map (Payload.toTokens codec)))
    (ns.map (Message.map (Payload.toTokens codec))) g
  rw [← List.map_append] at h
  exact h

/-! ## Inference and training agree -/

/-- The generation prompt for `ms`, followed by the tokens the model sampled (the blocks
`bs`, with their delimiters) and the assistant end of turn, is token for token the render of
`ms` with the assistant message `bs` appended: the training sequence is exactly what the
inference engine saw and produced. -/
theorem prompt_prefix (f : EncFormat) (ms : List (Message (List Token)))
    (bs : List (Block (List Token))) :
    ids (f.renderTok ⟨ms, true⟩) ++ ids (f.renderBlocks ms.length true bs) ++
        f.footer .assistant =
      ids (f.renderTok ⟨ms ++ [⟨.assistant, bs⟩], false⟩) := by
  rw [render_append]
  simp [renderTok, renderMsgs, renderMsg, List.append_assoc]

/-- String-level `prompt_prefix`: with the format's literal pieces and the payloads encoded
by the codec, the generation prompt, the sampled assistant blocks and the end of turn are
exactly the render of the conversation with that assistant message appended. -/
theorem prompt_prefix_text (fmt : ChatFormat) (codec : Codec) (ms : List (Message Payload))
    (bs : List (Block Payload)) :
    ids (render fmt codec ⟨ms, true⟩) ++
        ids ((fmt.encode codec).renderBlocks ms.length true
          (bs.map (Block.map (Payload.toTokens codec)))) ++
        (fmt.encode codec).footer .assistant =
      ids (render fmt codec ⟨ms ++ [⟨.assistant, bs⟩], false⟩) := by
  have h := prompt_prefix (fmt.encode codec) (ms.map (Message.map (Payload.toTokens codec)))
    (bs.map (Block.map (Payload.toTokens codec)))
  rw [List.length_map] at h
  show ids ((fmt.encode codec).renderTok
      ⟨ms.map (Message.map (Payload.toTokens codec)), true⟩) ++ _ ++ _ =
    ids ((fmt.encode codec).renderTok
      ⟨(ms ++ [(⟨.assistant, bs⟩ : Message Payload)]).map
        (Message.map (Payload.toTokens codec)), false⟩)
  rw [List.map_append]
  exact h

/-! ## The loss mask -/

theorem cellsOf_good {x : Cell} {s : Src} {i : Nat} {l : Bool} {ts : List Token}
    (h : x ∈ cellsOf s i l ts) : x.owner = i ∧ x.loss = (l && x.src.learned) := by
  obtain ⟨t, _, rfl⟩ := mem_cellsOf.mp h
  exact ⟨rfl, rfl⟩

theorem renderFooter_good (f : EncFormat) {x : Cell} {i : Nat} {l : Bool} {ts : List Token}
    (h : x ∈ f.renderFooter i l ts) : x.owner = i ∧ x.loss = (l && x.src.learned) := by
  cases ts with
  | nil => simp [renderFooter] at h
  | cons t ts =>
    simp only [renderFooter, List.mem_cons] at h
    rcases h with rfl | h
    · simp [Src.learned]
    · exact cellsOf_good h

theorem renderBlock_good (f : EncFormat) {x : Cell} {i : Nat} {l : Bool}
    {b : Block (List Token)} (h : x ∈ f.renderBlock i l b) :
    x.owner = i ∧ x.loss = (l && x.src.learned) := by
  cases b with
  | plain p =>
    simp only [renderBlock, List.mem_append] at h
    rcases h with (h | h) | h <;> exact cellsOf_good h
  | reasoning p =>
    simp only [renderBlock, List.mem_append] at h
    rcases h with (h | h) | h <;> exact cellsOf_good h
  | toolCall n a =>
    simp only [renderBlock, List.mem_append] at h
    rcases h with (((h | h) | h) | h) | h <;> exact cellsOf_good h

theorem renderBlocks_good (f : EncFormat) {x : Cell} {i : Nat} {l : Bool}
    {bs : List (Block (List Token))} (h : x ∈ f.renderBlocks i l bs) :
    x.owner = i ∧ x.loss = (l && x.src.learned) := by
  induction bs with
  | nil => simp [renderBlocks] at h
  | cons b bs ih =>
    simp only [renderBlocks, List.mem_append] at h
    rcases h with h | h
    · exact renderBlock_good f h
    · exact ih h

theorem renderMsg_good (f : EncFormat) {x : Cell} {i : Nat} {m : Message (List Token)}
    (h : x ∈ f.renderMsg i m) :
    x.owner = i ∧ x.loss = ((m.role == .assistant) && x.src.learned) := by
  simp only [renderMsg, List.mem_append] at h
  rcases h with (h | h) | h
  · exact cellsOf_good h
  · exact renderBlocks_good f h
  · exact renderFooter_good f h

theorem renderMsgs_good (f : EncFormat) {x : Cell} {i : Nat} {ms : List (Message (List Token))}
    (h : x ∈ f.renderMsgs i ms) :
    ∃ j m, ms[j]? = some m ∧ x.owner = i + j ∧
      x.loss = ((m.role == .assistant) && x.src.learned) := by
  induction ms generalizing i with
  | nil => simp [renderMsgs] at h
  | cons m ms ih =>
    simp only [renderMsgs, List.mem_append] at h
    rcases h with h | h
    · obtain ⟨h1, h2⟩ := renderMsg_good f h
      exact ⟨0, m, by simp, by omega, h2⟩
    · obtain ⟨j, m', hj, h1, h2⟩ := ih (i := i + 1) h
      exact ⟨j + 1, m', by simpa using hj, by omega, h2⟩

/-- Loss-mask specification: a cell of the render is learned (mask bit 1) exactly when its
owner message is an assistant message and the token is one the model produces (a payload
token, a block delimiter, or the end of turn). Headers, BOS, footer tails, the generation
prompt and every other role's tokens are never learned. -/
theorem mask_spec (f : EncFormat) (c : Conversation (List Token)) :
    ∀ x ∈ f.renderTok c, x.loss = true ↔
      ((c.messages[x.owner]?).map Message.role = some .assistant ∧ x.src.learned = true) := by
  intro x hx
  simp only [renderTok, List.mem_append] at hx
  rcases hx with (hx | hx) | hx
  · obtain ⟨t, _, rfl⟩ := mem_cellsOf.mp hx
    simp [Src.learned]
  · obtain ⟨j, m, hj, h1, h2⟩ := renderMsgs_good f hx
    rw [h2, h1, Nat.zero_add, hj]
    simp
  · split at hx
    · simp only [renderPrompt] at hx
      obtain ⟨t, _, rfl⟩ := mem_cellsOf.mp hx
      simp [Src.learned]
    · simp at hx

/-- Loss-mask specification at the string level: for the render of a user conversation, the
mask bit is 1 exactly on the model-produced tokens of assistant messages. -/
theorem mask_spec_text (fmt : ChatFormat) (codec : Codec) (c : Conversation Payload) :
    ∀ x ∈ render fmt codec c, x.loss = true ↔
      ((c.messages[x.owner]?).map Message.role = some .assistant ∧ x.src.learned = true) := by
  intro x hx
  have hx' : x ∈ (fmt.encode codec).renderTok (c.toTokens codec) := hx
  rw [mask_spec _ _ x hx', Conversation.toTokens_role]

/-- Every owner index is a message index, or the number of messages (for the generation
prompt, which belongs to the message about to be generated). -/
theorem owner_le (f : EncFormat) (c : Conversation (List Token)) :
    ∀ x ∈ f.renderTok c, x.owner ≤ c.messages.length := by
  intro x hx
  simp only [renderTok, List.mem_append] at hx
  rcases hx with (hx | hx) | hx
  · obtain ⟨t, _, rfl⟩ := mem_cellsOf.mp hx
    simp
  · obtain ⟨j, m, hj, h1, _⟩ := renderMsgs_good f hx
    have := lt_length_of_getElem?_eq_some hj
    omega
  · split at hx
    · simp only [renderPrompt] at hx
      obtain ⟨t, _, rfl⟩ := mem_cellsOf.mp hx
      simp
    · simp at hx

/-! ## No forgery -/

section NoForgery

variable {α : Type}

theorem src_ne_payload_of_mem_renderFooter (f : EncFormat) {x : Cell} {i : Nat} {l : Bool}
    {ts : List Token} (h : x ∈ f.renderFooter i l ts) : x.src ≠ .payload := by
  cases ts with
  | nil => simp [renderFooter] at h
  | cons t ts =>
    simp only [renderFooter, List.mem_cons] at h
    rcases h with rfl | h
    · simp
    · obtain ⟨t, _, rfl⟩ := mem_cellsOf.mp h
      simp

theorem src_of_mem_cellsOf {x : Cell} {s : Src} {i : Nat} {l : Bool} {ts : List Token}
    (h : x ∈ cellsOf s i l ts) : x.src = s ∧ x.tok ∈ ts := by
  obtain ⟨t, ht, rfl⟩ := mem_cellsOf.mp h
  exact ⟨rfl, ht⟩

theorem payload_of_mem_renderBlock (f : EncFormat) {g : α → List Token} {x : Cell} {i : Nat}
    {l : Bool} {b : Block α} (h : x ∈ f.renderBlock i l (b.map g)) (hs : x.src = .payload) :
    ∃ a, x.tok ∈ g a := by
  cases b with
  | plain p =>
    simp only [Block.map, renderBlock, List.mem_append] at h
    rcases h with (h | h) | h
    · simp [(src_of_mem_cellsOf h).1] at hs
    · exact ⟨p, (src_of_mem_cellsOf h).2⟩
    · simp [(src_of_mem_cellsOf h).1] at hs
  | reasoning p =>
    simp only [Block.map, renderBlock, List.mem_append] at h
    rcases h with (h | h) | h
    · simp [(src_of_mem_cellsOf h).1] at hs
    · exact ⟨p, (src_of_mem_cellsOf h).2⟩
    · simp [(src_of_mem_cellsOf h).1] at hs
  | toolCall n a =>
    simp only [Block.map, renderBlock, List.mem_append] at h
    rcases h with (((h | h) | h) | h) | h
    · simp [(src_of_mem_cellsOf h).1] at hs
    · exact ⟨n, (src_of_mem_cellsOf h).2⟩
    · simp [(src_of_mem_cellsOf h).1] at hs
    · exact ⟨a, (src_of_mem_cellsOf h).2⟩
    · simp [(src_of_mem_cellsOf h).1] at hs

theorem payload_of_mem_renderBlocks (f : EncFormat) {g : α → List Token} {x : Cell} {i : Nat}
    {l : Bool} {bs : List (Block α)} (h : x ∈ f.renderBlocks i l (bs.map (Block.map g)))
    (hs : x.src = .payload) : ∃ a, x.tok ∈ g a := by
  induction bs with
  | nil => simp [renderBlocks] at h
  | cons b bs ih =>
    simp only [List.map_cons, renderBlocks, List.mem_append] at h
    rcases h with h | h
    · exact payload_of_mem_renderBlock f h hs
    · exact ih h

theorem payload_of_mem_renderMsgs (f : EncFormat) {g : α → List Token} {x : Cell} {i : Nat}
    {ms : List (Message α)} (h : x ∈ f.renderMsgs i (ms.map (Message.map g)))
    (hs : x.src = .payload) : ∃ a, x.tok ∈ g a := by
  induction ms generalizing i with
  | nil => simp [renderMsgs] at h
  | cons m ms ih =>
    simp only [List.map_cons, renderMsgs, List.mem_append] at h
    rcases h with h | h
    · simp only [renderMsg, Message.map_role, Message.map_blocks, List.mem_append] at h
      rcases h with (h | h) | h
      · simp [(src_of_mem_cellsOf h).1] at hs
      · exact payload_of_mem_renderBlocks f h hs
      · exact absurd hs (src_ne_payload_of_mem_renderFooter f h)
    · exact ih (i := i + 1) h

theorem payload_of_mem_renderTok (f : EncFormat) {g : α → List Token} {x : Cell}
    {c : Conversation α} (h : x ∈ f.renderTok (c.map g)) (hs : x.src = .payload) :
    ∃ a, x.tok ∈ g a := by
  simp only [renderTok, Conversation.map_messages, List.mem_append] at h
  rcases h with (h | h) | h
  · simp [(src_of_mem_cellsOf h).1] at hs
  · exact payload_of_mem_renderMsgs f h hs
  · split at h
    · simp only [renderPrompt] at h
      simp [(src_of_mem_cellsOf h).1] at hs
    · simp at h

/-- No forgery: with a lawful codec, no payload cell of the render of a text conversation
carries a reserved (control) token, whatever the text says; a user cannot inject
`<|im_end|>` or a role header through message content. -/
theorem no_forgery (fmt : ChatFormat) (codec : Codec) (hc : codec.Lawful fmt.reserved)
    (c : Conversation String) :
    ∀ x ∈ render fmt codec (c.map Payload.text), x.src = .payload →
      isReserved fmt.reserved x.tok = false := by
  intro x hx hs
  have hx' : x ∈ (fmt.encode codec).renderTok (c.map codec.encode) := by
    rw [← Conversation.toTokens_text]
    exact hx
  obtain ⟨s, hts⟩ := payload_of_mem_renderTok (fmt.encode codec) hx' hs
  exact hc.not_reserved s _ hts

theorem filter_cellsOf_free {res : List Token} {ts : List Token} (s : Src) (i : Nat) (l : Bool)
    (h : allFree res ts = true) :
    (cellsOf s i l ts).filter (fun x => isReserved res x.tok) = [] := by
  rw [List.filter_eq_nil_iff]
  intro x hx
  obtain ⟨t, ht, rfl⟩ := mem_cellsOf.mp hx
  simp [allFree_iff.mp h t ht]

theorem filter_renderBlock_map (f : EncFormat) (res : List Token) {g : α → List Token}
    (hg : ∀ a, allFree res (g a) = true) (i : Nat) (l : Bool) (b : Block α) :
    (f.renderBlock i l (b.map g)).filter (fun x => isReserved res x.tok) =
      (f.renderBlock i l (b.map fun _ => ([] : List Token))).filter
        (fun x => isReserved res x.tok) := by
  cases b <;> simp [Block.map, renderBlock, List.filter_append, filter_cellsOf_free, hg]

theorem filter_renderBlocks_map (f : EncFormat) (res : List Token) {g : α → List Token}
    (hg : ∀ a, allFree res (g a) = true) (i : Nat) (l : Bool) (bs : List (Block α)) :
    (f.renderBlocks i l (bs.map (Block.map g))).filter (fun x => isReserved res x.tok) =
      (f.renderBlocks i l (bs.map (Block.map fun _ => ([] : List Token)))).filter
        (fun x => isReserved res x.tok) := by
  induction bs with
  | nil => rfl
  | cons b bs ih =>
    simp only [List.map_cons, renderBlocks, List.filter_append, ih,
      filter_renderBlock_map f res hg]

theorem filter_renderMsgs_map (f : EncFormat) (res : List Token) {g : α → List Token}
    (hg : ∀ a, allFree res (g a) = true) (i : Nat) (ms : List (Message α)) :
    (f.renderMsgs i (ms.map (Message.map g))).filter (fun x => isReserved res x.tok) =
      (f.renderMsgs i (ms.map (Message.map fun _ => ([] : List Token)))).filter
        (fun x => isReserved res x.tok) := by
  induction ms generalizing i with
  | nil => rfl
  | cons m ms ih =>
    simp only [List.map_cons, renderMsgs, renderMsg, Message.map_role, Message.map_blocks,
      List.filter_append, ih, filter_renderBlocks_map f res hg]

theorem filter_renderTok_map (f : EncFormat) (res : List Token) {g : α → List Token}
    (hg : ∀ a, allFree res (g a) = true) (c : Conversation α) :
    (f.renderTok (c.map g)).filter (fun x => isReserved res x.tok) =
      (f.renderTok (c.map fun _ => ([] : List Token))).filter
        (fun x => isReserved res x.tok) := by
  simp only [renderTok, Conversation.map_messages, Conversation.map_addGenerationPrompt,
    List.filter_append, filter_renderMsgs_map f res hg, List.length_map]

end NoForgery

/-- Control skeleton: with a lawful codec, the reserved (control) cells of the render of a
text conversation, with their positions' provenance, owner and mask bit, are determined by
the conversation's shape (roles and block kinds) alone. Text can neither add, remove nor
move a control token. -/
theorem control_skeleton (fmt : ChatFormat) (codec : Codec) (hc : codec.Lawful fmt.reserved)
    (c d : Conversation String) (h : c.shape = d.shape) :
    (render fmt codec (c.map Payload.text)).filter (fun x => isReserved fmt.reserved x.tok) =
      (render fmt codec (d.map Payload.text)).filter
        (fun x => isReserved fmt.reserved x.tok) := by
  have key : ∀ e : Conversation String,
      (render fmt codec (e.map Payload.text)).filter (fun x => isReserved fmt.reserved x.tok) =
        ((fmt.encode codec).renderTok (e.shape.map fun _ => ([] : List Token))).filter
          (fun x => isReserved fmt.reserved x.tok) := by
    intro e
    simp only [render, Conversation.toTokens_text]
    rw [filter_renderTok_map (fmt.encode codec) fmt.reserved hc.encode_free e]
    (simp only [Conversation.shape, Conversation.map_map, Function.comp_def]) <;> rfl
  rw [key c, key d, h]

end Verified

end
