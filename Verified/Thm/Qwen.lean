module

public import Verified.Spec.Qwen
public import Verified.Thm.Format
public import Verified.Thm.QwenMask
public import Verified.Thm.QwenSound

public section

/-!
# Theorems of the Qwen family

* `qwen25Ids_wf`, `qwen3Ids_wf`: the reference tokenizers' control ids are distinct.
* `lawful`: the Qwen formats satisfy `Format.Lawful`, so `parse_render`, `render_parse`,
  `render_injective` and `no_forgery` (`Thm/Format.lean`) hold for them.
* `prompt_prefix`: the generation prompt, the sampled tokens and the end of turn are the
  render of the conversation with the sampled turn appended (ids, mask and owners).
* `prefix_stable`: Qwen2.5 and Qwen3-stable: the render of a conversation is a prefix of the
  render of every extension, unless a tool result directly follows a tool result.
* `extension_exact`: Qwen3 (exact): at a generation prompt, every append that starts with a
  sampled assistant turn and holds no user message extends the render;
  `exact_not_prefix`: appending a user message does not (an earlier think block is dropped).
* `mask_owner`, `mask_sampled`: only assistant messages are learned, and in a conversation
  whose assistant turns are sampled the learned tokens are exactly those turns' tokens, each
  followed by its end of turn.

The supporting lemmas: `Thm/QwenLayout.lean` (items, symbols, control tokens),
`Thm/QwenLower.lean` (lowering and grouping), `Thm/QwenMask.lean` (owners and loss bits),
`Thm/QwenParse.lean`, `Thm/QwenRead.lean` (`unlayout_layout`) and `Thm/QwenSound.lean`
(`layout_unlayout`).
-/

namespace Verified.Qwen

open Verified

theorem qwen25Ids_wf : qwen25Ids.wf = true := by decide

theorem qwen3Ids_wf : qwen3Ids.wf = true := by decide

/-- The Qwen formats are lawful for ids whose control tokens are distinct. -/
theorem lawful (f : QwenFmt) (hf : f.ids.wf = true) : (format f).Lawful := by
  refine ⟨fun c l hl ht => unlayout_layout f hf hl ht, fun s l h => layout_unlayout f s l h,
    fun l t ht => ?_, syms_layout_erase f⟩
  have := ctrls_layout f l t ht
  simp [format, isReserved, this]

/-- Inference and training agree: the render with the generation prompt, then the tokens the
policy sampled (learned, owned by the new message), then the end of turn, is the render of
the conversation with the sampled turn appended. In the exact mode the last message must not
be an assistant message (the template writes a last assistant turn differently). -/
theorem prompt_prefix (f : QwenFmt) (codec : Codec) (ms : List Message)
    (tools : Option (List Json)) (ts : List Token) (l : QConv)
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hts : ts.all (fun t => !isReserved f.ids.reserved t || f.ids.bodyCtrl t) = true)
    (hlast : f.mode = .exact → ∀ m ∈ ms.getLast?, m.role ≠ .assistant) :
    ∃ l', lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l' ∧
      encodeItems codec (layout f l') =
        encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
          encodeItems codec (footer f ms.length true) := by
  obtain ⟨st, pre, hst, hpre, hall, hle⟩ := lower_eq_some f hl
  obtain ⟨ts0, p0⟩ := l
  have h0 : ts0 = st ++ group pre := congrArg QConv.turns hle
  have hp0 : p0 = some ms.length := congrArg QConv.prompt hle
  subst h0 hp0
  have hst : systemTurn f ms tools = some st := hst
  have hpre : lowerMsgs f ms.length (lastQuery ms) 0 ms = some pre := hpre
  have hng : NotGroup (.sampled ts ms.length) := fun rs h => by cases h
  have hst' : systemTurn f (ms ++ [⟨.assistant, [.sampled ts]⟩]) tools = some st := by
    rw [systemTurn_append f ms _ tools (Or.inr (by simp)), hst]
  have hpre' : lowerMsgs f (ms ++ [(⟨.assistant, [.sampled ts]⟩ : Message)]).length
      (lastQuery (ms ++ [⟨.assistant, [.sampled ts]⟩])) 0 (ms ++ [⟨.assistant, [.sampled ts]⟩]) =
      some (pre ++ [.turn (.sampled ts ms.length)]) := by
    rw [lowerMsgs_append, lowerMsgs_prefix f ms [⟨.assistant, [.sampled ts]⟩]
      (fun hmode => ⟨by simp, hlast hmode⟩), hpre]
    simp [lowerMsgs_singleton, lowerMsg_sampled]
  have hg : group (pre ++ [.turn (.sampled ts ms.length)]) =
      group pre ++ [.sampled ts ms.length] := group_append_turn _ hng [] pre
  have hall' : (st ++ group (pre ++ [.turn (.sampled ts ms.length)])).all (turnOk f) = true := by
    rw [hg, ← List.append_assoc, List.all_append, hall]
    simp [turnOk, hts]
  have hl' := lower_of f (c := ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩) hst' hpre' hall'
  simp only [Bool.false_eq_true, ↓reduceIte] at hl'
  refine ⟨_, hl', ?_⟩
  have e1 : layout f ⟨st ++ group (pre ++ [.turn (.sampled ts ms.length)]), none⟩ =
      layout f ⟨st ++ group pre, some ms.length⟩ ++
        ([⟨.toks ts, ⟨ms.length, true⟩⟩] ++ footer f ms.length true) := by
    rw [hg]
    simp [layout, turnItems]
  rw [e1, encode_sampled]

/-- Qwen2.5 and Qwen3-stable never rewrite history: the render of a conversation is a prefix
of the render of any extension of it (ids, mask and owners), unless a tool result is appended
right after a tool result (the template writes consecutive results in one turn). -/
theorem prefix_stable (f : QwenFmt) (hm : f.mode ≠ .exact) (codec : Codec)
    (ms ns : List Message) (tools : Option (List Json)) (g : Bool) (l l' : QConv)
    (hms : ms ≠ [])
    (hsep : (∀ m ∈ ms.getLast?, m.role ≠ .tool) ∨ (∀ m ∈ ns.head?, m.role ≠ .tool))
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨st, pre, hst, hpre, -, hle⟩ := lower_eq_some f hl
  obtain ⟨st', pre', hst', hpre', -, hle'⟩ := lower_eq_some f hl'
  obtain ⟨ts0, p0⟩ := l
  obtain ⟨ts1, p1⟩ := l'
  have h0 : ts0 = st ++ group pre := congrArg QConv.turns hle
  have hp0 : p0 = none := congrArg QConv.prompt hle
  have h1 : ts1 = st' ++ group pre' := congrArg QConv.turns hle'
  subst h0 hp0 h1
  have hst : systemTurn f ms tools = some st := hst
  have hst' : systemTurn f (ms ++ ns) tools = some st' := hst'
  rw [systemTurn_append f ms ns tools (Or.inl hms), hst] at hst'
  cases hst'
  have hpre : lowerMsgs f ms.length (lastQuery ms) 0 ms = some pre := hpre
  have hpre' : lowerMsgs f (ms ++ ns).length (lastQuery (ms ++ ns)) 0 (ms ++ ns) = some pre' :=
    hpre'
  obtain ⟨a, b, ha, hb, rfl⟩ := lowerMsgs_append_eq_some f hpre'
  rw [lowerMsgs_prefix f ms ns (fun h => absurd h hm), hpre] at ha
  cases ha
  have hg : group (pre ++ b) = group pre ++ group b := by
    apply group_append
    rcases hsep with h | h
    · exact Or.inl (lowerMsgs_last f hpre h)
    · right
      cases ns with
      | nil =>
        left
        simp only [lowerMsgs, Option.some.injEq] at hb
        exact hb.symm
      | cons m ns =>
        right
        exact lowerMsgs_head f hb (by rw [Nat.zero_add]; exact List.length_pos_iff.mpr hms)
          (h m rfl)
  rw [hg, ← List.append_assoc, layout_append f (st ++ group pre) (group b) p1]
  exact ⟨_, (encodeItems_append codec _ _ (head_layout f _)).symm⟩

/-- Qwen3 (exact) rewrites history, but at a generation prompt (after a user message or a
complete group of tool results) the render extends across every append that starts with the
sampled assistant turn and adds no user message. -/
theorem extension_exact (f : QwenFmt) (hm : f.mode = .exact) (codec : Codec)
    (ms ns : List Message) (tools : Option (List Json)) (ts : List Token) (g : Bool)
    (l l' : QConv)
    (hlast : ∀ m ∈ ms.getLast?, m.role ≠ .assistant) (hns : ∀ m ∈ ns, m.role ≠ .user)
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  have _ := hm
  obtain ⟨st, pre, hst, hpre, -, hle⟩ := lower_eq_some f hl
  obtain ⟨st', pre', hst', hpre', -, hle'⟩ := lower_eq_some f hl'
  obtain ⟨ts0, p0⟩ := l
  obtain ⟨ts1, p1⟩ := l'
  have h0 : ts0 = st ++ group pre := congrArg QConv.turns hle
  have hp0 : p0 = some ms.length := congrArg QConv.prompt hle
  have h1 : ts1 = st' ++ group pre' := congrArg QConv.turns hle'
  subst h0 hp0 h1
  have hst : systemTurn f ms tools = some st := hst
  have hst' : systemTurn f (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns) tools = some st' := hst'
  rw [systemTurn_append f ms _ tools (Or.inr (by simp)), hst] at hst'
  cases hst'
  have hpre : lowerMsgs f ms.length (lastQuery ms) 0 ms = some pre := hpre
  have hpre' : lowerMsgs f (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns).length
      (lastQuery (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns)) 0
      (ms ++ ⟨.assistant, [.sampled ts]⟩ :: ns) = some pre' := hpre'
  have hns' : ∀ m ∈ (⟨.assistant, [.sampled ts]⟩ :: ns : List Message), m.role ≠ .user := by
    intro m hm'
    rcases List.mem_cons.mp hm' with rfl | hm'
    · intro h
      cases h
    · exact hns m hm'
  obtain ⟨a, b, ha, hb, rfl⟩ := lowerMsgs_append_eq_some f hpre'
  rw [lowerMsgs_prefix f ms _ (fun _ => ⟨hns', hlast⟩), hpre] at ha
  cases ha
  rw [Nat.zero_add] at hb
  simp only [lowerMsgs, Option.bind_eq_some_iff, Option.map_eq_some_iff] at hb
  obtain ⟨a1, ha1, b1, -, rfl⟩ := hb
  rw [lowerMsg_sampled] at ha1
  cases ha1
  have hng : NotGroup (.sampled ts ms.length) := fun rs h => by cases h
  rw [List.singleton_append, group_append_turn _ hng, ← List.append_assoc,
    layout_append f (st ++ group pre) _ p1]
  have e0 : layout f ⟨st ++ group pre, some ms.length⟩ =
      layout f ⟨st ++ group pre, none⟩ ++ promptItems f ms.length := by
    simp [layout]
  have e1 : layout f ⟨.sampled ts ms.length :: group b1, p1⟩ =
      promptItems f ms.length ++ ([⟨.toks ts, ⟨ms.length, true⟩⟩] ++
        (footer f ms.length true ++ layout f ⟨group b1, p1⟩)) := by
    simp [layout, turnItems]
  rw [e0, e1, ← List.append_assoc]
  exact encode_prefix f codec _ _ ts _ ms.length true

/-- Where the exact format is not prefix stable: a reasoning turn followed by a new user
message loses its think block (`loop.index0 > ns.last_query_index` no longer holds). -/
theorem exact_not_prefix :
    ∃ ms ns l l', lower (qwen3 .exact true) ⟨ms, none, false⟩ = some l ∧
      lower (qwen3 .exact true) ⟨ms ++ ns, none, false⟩ = some l' ∧
      ¬ (syms (layout (qwen3 .exact true) l) <+:
          syms (layout (qwen3 .exact true) l')) := by
  refine ⟨[⟨.user, [.plain (.text ['a'])]⟩,
      ⟨.assistant, [.reasoning (.text ['r']), .plain (.text ['b'])]⟩],
    [⟨.user, [.plain (.text ['c'])]⟩], _, _, rfl, rfl, ?_⟩
  rw [← List.isPrefixOf_iff_prefix]
  set_option maxRecDepth 100000 in decide

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (f : QwenFmt) (codec : Codec) (c : Conversation) (l : QConv)
    (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  obtain ⟨st, pre, hst, hpre, -, rfl⟩ := lower_eq_some f hl
  rcases mem_layout f hit with ⟨t, ht, hit⟩ | ⟨o, hit⟩
  · have ha := turnItems_ann f t it hit
    rcases List.mem_append.mp ht with ht | ht
    · have := annOk_none (systemTurn_asst f hst t ht) ha
      rw [← hlearn] at this
      cases this
    · rcases mem_group ht with ⟨rs, rfl⟩ | ht
      · have := annOk_none rfl ha
        rw [← hlearn] at this
        cases this
      · obtain ⟨j, m, hm, hto⟩ := lowerMsgs_turn f _ 0 pre hpre t ht
        obtain ⟨ho, hr⟩ := hto.learned ha hlearn.symm
        refine ⟨m, ?_, hr⟩
        rw [hown, ho, Nat.zero_add]
        exact hm
  · have := promptItems_learn f o it hit
    rw [← hlearn] at this
    cases this

/-- In a conversation whose assistant turns are all sampled, the learned tokens are exactly
the sampled tokens of each assistant message followed by its end of turn, in order, each
owned by its message. -/
theorem mask_sampled (f : QwenFmt) (codec : Codec) (c : Conversation) (l : QConv)
    (hl : lower f c = some l)
    (hs : ∀ m ∈ c.messages, m.role = .assistant → ∃ ts, m.blocks = [.sampled ts]) :
    ((encodeItems codec (layout f l)).filter (·.loss)).map (fun x => (x.tok, x.owner)) =
      (c.messages.zipIdx).flatMap (fun (m, i) =>
        match m.role, m.blocks with
        | .assistant, [.sampled ts] => (ts ++ [f.ids.imEnd]).map (·, i)
        | _, _ => []) := by
  obtain ⟨st, pre, hst, hpre, -, hle⟩ := lower_eq_some f hl
  obtain ⟨ts0, p0⟩ := l
  have h0 : ts0 = st ++ group pre := congrArg QConv.turns hle
  subst h0
  have hno : ∀ it ∈ layout f ⟨st ++ group pre, p0⟩, it.ann.learn = true →
      ∀ cs, it.piece ≠ .text cs := by
    intro it hit hlearn cs hp
    rcases mem_layout f hit with ⟨t, ht, hit⟩ | ⟨o, hit⟩
    · have ha := turnItems_ann f t it hit
      rcases List.mem_append.mp ht with ht | ht
      · have := annOk_none (systemTurn_asst f hst t ht) ha
        rw [hlearn] at this
        cases this
      · rcases mem_group ht with ⟨rs, rfl⟩ | ht
        · have := annOk_none rfl ha
          rw [hlearn] at this
          cases this
        · obtain ⟨j, m, hm, hto⟩ := lowerMsgs_turn f _ 0 pre hpre t ht
          cases t with
          | plain r p o =>
            have := annOk_none rfl ha
            rw [hlearn] at this
            cases this
          | toolsSystem _ _ _ => exact hto.elim
          | assistant th c' s ks o =>
            obtain ⟨ts, hts⟩ := hs m (List.mem_of_getElem? hm) hto.2.1
            exact hto.2.2 ts hts
          | toolGroup _ => exact hto.elim
          | sampled ts o => exact sampled_no_text f ts o it hit hlearn cs hp
    · have := promptItems_learn f o it hit
      rw [hlearn] at this
      cases this
  rw [learned_of_no_learned_text codec _ hno]
  exact sampled_flat f _ (fun it h => by simp [h]) (fun _ _ => by rfl) (fun _ _ => by rfl) hst hpre
    hs p0 _ (fun m i hr => by
      dsimp only
      split
      · exact absurd ‹_› hr
      · rfl)
    (fun m i ts hr hb => by
      dsimp only
      simp only [hr, hb])

end Verified.Qwen

end
