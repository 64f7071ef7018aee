module

public import Verified.Spec.Message
public import Verified.Thm.Token

public section

/-!
# Lemmas about the message AST

Mapping payloads is functorial (`map_map`), injective maps give injective maps on blocks,
messages and conversations (`map_injective`), encoding a text conversation is mapping the
codec over its payloads (`Conversation.toTokens_text`), and mapping payloads keeps the shape
(`shape_map`).
-/

namespace Verified

variable {α β γ : Type}

/-- Mapping a block twice is mapping it once with the composite. -/
@[simp] theorem Block.map_map (f : α → β) (g : β → γ) (b : Block α) :
    (b.map f).map g = b.map (g ∘ f) := by
  cases b <;> rfl

/-- Function form of `Block.map_map`. -/
theorem Block.map_comp (f : α → β) (g : β → γ) :
    Block.map g ∘ Block.map f = Block.map (g ∘ f) := by
  funext b
  exact Block.map_map f g b

@[simp] theorem Message.map_role (f : α → β) (m : Message α) : (m.map f).role = m.role := rfl

@[simp] theorem Message.map_blocks (f : α → β) (m : Message α) :
    (m.map f).blocks = m.blocks.map (Block.map f) := rfl

@[simp] theorem Conversation.map_messages (f : α → β) (c : Conversation α) :
    (c.map f).messages = c.messages.map (Message.map f) := rfl

@[simp] theorem Conversation.map_addGenerationPrompt (f : α → β) (c : Conversation α) :
    (c.map f).addGenerationPrompt = c.addGenerationPrompt := rfl

/-- Mapping a message twice is mapping it once with the composite. -/
@[simp] theorem Message.map_map (f : α → β) (g : β → γ) (m : Message α) :
    (m.map f).map g = m.map (g ∘ f) := by
  simp only [Message.map, List.map_map, Block.map_comp]

/-- Function form of `Message.map_map`. -/
theorem Message.map_comp (f : α → β) (g : β → γ) :
    Message.map g ∘ Message.map f = Message.map (g ∘ f) := by
  funext m
  exact Message.map_map f g m

/-- Mapping a conversation twice is mapping it once with the composite: re-encoding
payloads in stages is the same as encoding them in one go. -/
@[simp] theorem Conversation.map_map (f : α → β) (g : β → γ) (c : Conversation α) :
    (c.map f).map g = c.map (g ∘ f) := by
  simp only [Conversation.map, List.map_map, Message.map_comp]

/-- `List.map` of an injective function is injective. -/
theorem list_map_injective {f : α → β} (hf : Function.Injective f) :
    Function.Injective (List.map f) := by
  intro l₁
  induction l₁ with
  | nil =>
    intro l₂ h
    cases l₂ with
    | nil => rfl
    | cons _ _ => simp at h
  | cons a as ih =>
    intro l₂ h
    cases l₂ with
    | nil => simp at h
    | cons b bs =>
      simp only [List.map_cons, List.cons.injEq] at h
      rw [hf h.1, ih h.2]

/-- An injective payload map is injective on blocks. -/
theorem Block.map_injective {f : α → β} (hf : Function.Injective f) :
    Function.Injective (Block.map f) := by
  intro a b h
  cases a <;> cases b <;> simp only [Block.map, Block.plain.injEq, Block.reasoning.injEq,
    Block.toolCall.injEq, reduceCtorEq] at h ⊢
  · exact hf h
  · exact hf h
  · exact ⟨hf h.1, hf h.2⟩

/-- An injective payload map is injective on messages. -/
theorem Message.map_injective {f : α → β} (hf : Function.Injective f) :
    Function.Injective (Message.map f) := by
  intro a b h
  cases a with
  | mk r bs =>
    cases b with
    | mk r' bs' =>
      simp only [Message.map, Message.mk.injEq] at h ⊢
      exact ⟨h.1, list_map_injective (Block.map_injective hf) h.2⟩

/-- An injective payload map is injective on conversations: a lawful codec's encoding
(`Codec.Lawful.encode_injective`) never identifies two different text conversations. -/
theorem Conversation.map_injective {f : α → β} (hf : Function.Injective f) :
    Function.Injective (Conversation.map f) := by
  intro a b h
  cases a with
  | mk ms g =>
    cases b with
    | mk ms' g' =>
      simp only [Conversation.map, Conversation.mk.injEq] at h ⊢
      exact ⟨list_map_injective (Message.map_injective hf) h.1, h.2⟩

/-- Pre-encoding a text conversation is mapping the codec over its payloads. -/
theorem Conversation.toTokens_text (codec : Codec) (c : Conversation String) :
    (c.map Payload.text).toTokens codec = c.map codec.encode := by
  (simp only [Conversation.toTokens, Conversation.map_map]) <;> rfl

/-- Mapping payloads keeps the shape (roles and block kinds) of a conversation. -/
@[simp] theorem shape_map (f : α → β) (c : Conversation α) : (c.map f).shape = c.shape := by
  (simp only [Conversation.shape, Conversation.map_map]) <;> rfl

/-- Pre-encoding keeps the roles of the messages. -/
@[simp] theorem Conversation.toTokens_role (codec : Codec) (c : Conversation Payload)
    (i : Nat) :
    ((c.toTokens codec).messages[i]?).map Message.role = (c.messages[i]?).map Message.role := by
  first
    | (cases h : c.messages[i]? <;>
        simp [Conversation.toTokens, Conversation.map, List.getElem?_map, h, Message.map])
    | ((simp only [Conversation.toTokens, Conversation.map_messages, List.getElem?_map,
        Option.map_map]) <;> rfl)

end Verified

end
