module

public import Verified.Thm.Parse
public import Verified.Thm.Message

public section

/-!
# Injectivity of the string-level render

`renderTok_injective` (in `Thm/Parse.lean`) says that two valid pre-encoded conversations
with the same token ids are equal. Here it is lifted to what users write: conversations
whose payloads are text or tokens, rendered through a lawful codec. For text conversations
the render is injective outright, because a lawful codec is injective (its decoding inverts
it); for mixed payloads the render determines the token-exact form `toTokens`, which is all
that training consumes.
-/

namespace Verified

/-- The token ids of a render determine the pre-encoded conversation: two valid
conversations (text or token payloads) that render to the same ids have the same token-exact
form. Whatever the trainer reconstructs from ids is what was rendered. -/
theorem render_injective_toTokens (fmt : ChatFormat) (codec : Codec)
    (hf : (fmt.encode codec).WellFormed) (c d : Conversation Payload)
    (hc : fmt.Valid codec c) (hd : fmt.Valid codec d)
    (h : ids (render fmt codec c) = ids (render fmt codec d)) :
    c.toTokens codec = d.toTokens codec := by
  have ec := parse_render_text fmt codec hf c hc
  have ed := parse_render_text fmt codec hf d hd
  rw [h, ed] at ec
  exact (Option.some.inj ec).symm

/-- Two valid text conversations with equal renders are equal: different conversations can
never produce the same training tokens, so a token sequence identifies its conversation. -/
theorem render_injective (fmt : ChatFormat) (codec : Codec)
    (hf : (fmt.encode codec).WellFormed) (hcodec : codec.Lawful fmt.reserved)
    (c d : Conversation String)
    (hc : fmt.Valid codec (c.map Payload.text)) (hd : fmt.Valid codec (d.map Payload.text))
    (h : ids (render fmt codec (c.map Payload.text)) =
      ids (render fmt codec (d.map Payload.text))) :
    c = d := by
  have e := render_injective_toTokens fmt codec hf _ _ hc hd h
  rw [Conversation.toTokens_text, Conversation.toTokens_text] at e
  exact Conversation.map_injective hcodec.encode_injective e

end Verified

end
