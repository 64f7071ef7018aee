module

public import Verified.Thm.GemmaRead

public section

/-!
# Theorems of the Gemma 3 family

* `gemma3Ids_wf`, `lawful` (`Thm/GemmaRead.lean`): the reference ids are distinct, and the
  Gemma 3 format satisfies `Format.Lawful`, so `parse_render`, `render_parse`,
  `render_injective` and `no_forgery` (`Thm/Format.lean`) hold for it.
* `prefix_stable`: the render of a conversation is a prefix of the render of every extension
  (ids, mask and owners): the template never rewrites history.
* `prompt_prefix`: the generation prompt, the sampled tokens, `<end_of_turn>` and the `\n` after
  it are the render of the conversation with the sampled turn appended; `prompt_lowers`
  (`Thm/GemmaPrompt.lean`): after a user message that extension always lowers.
* `mask_owner`: only assistant messages are learned; `mask_sampled` (`Thm/GemmaMask.lean`):
  when every assistant turn is sampled, the learned tokens are exactly those turns' tokens, each
  followed by `<end_of_turn>`.

The lemmas here describe `lower`: the system prefix and the first loop message (`headOf_spec`,
`headOf_append`), one turn per later message owned by it (`lowerMsgs_spec`), and lowering an
extension appends the new messages' turns (`lowerMsgs_append`).
-/

namespace Verified.Gemma

open Verified

/-! ## The shape of `lower` -/

/-- The message index a turn belongs to. -/
@[expose] def GTurn.owner : GTurn → Nat
  | .user _ _ o => o
  | .model _ o => o
  | .sampled _ o => o

/-- Whether a turn has learned items (model turns and sampled turns). -/
@[expose] def GTurn.learned : GTurn → Bool
  | .user .. => false
  | _ => true

theorem lowerMsg_spec {pre : Chars} {u : Bool} {i : Nat} {m : Message} {t : GTurn}
    (h : lowerMsg pre u i m = some t) :
    t.owner = i ∧ (t.learned = true → m.role = .assistant) := by
  rcases m with ⟨role, blocks⟩
  unfold lowerMsg at h
  cases u
  · rw [if_neg (by decide)] at h
    cases role <;> dsimp only at h <;> try cases h
    split at h
    · cases h
      exact ⟨rfl, fun _ => rfl⟩
    · obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      exact ⟨rfl, fun _ => rfl⟩
  · rw [if_pos rfl] at h
    cases role <;> dsimp only at h <;> try cases h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    cases p <;> exact ⟨rfl, fun h => by cases h⟩

theorem lowerMsgs_spec : ∀ {ms : List Message} {pre : Chars} {u : Bool} {i : Nat}
    {ts : List GTurn}, lowerMsgs pre u i ms = some ts →
      ∀ t ∈ ts, ∃ j m, ms[j]? = some m ∧ t.owner = i + j ∧
        (t.learned = true → m.role = .assistant)
  | [], _, _, _, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | m :: ms, pre, u, i, ts, h => by
    simp only [lowerMsgs] at h
    cases hm : lowerMsg pre u i m with
    | none => rw [hm] at h; cases h
    | some t0 =>
      rw [hm, Option.bind_some] at h
      cases hr : lowerMsgs [] (!u) (i + 1) ms with
      | none => rw [hr] at h; cases h
      | some ts' =>
        rw [hr, Option.map_some, Option.some.injEq] at h
        subst h
        intro t ht
        rcases List.mem_cons.mp ht with rfl | ht
        · obtain ⟨ho, hl⟩ := lowerMsg_spec hm
          exact ⟨0, m, rfl, by simp [ho], hl⟩
        · obtain ⟨j, m', hj, ho, hl⟩ := lowerMsgs_spec hr t ht
          exact ⟨j + 1, m', by simpa using hj, by omega, hl⟩

theorem lowerMsgs_append : ∀ {ms : List Message} {pre : Chars} {u : Bool} {i : Nat}
    {ts : List GTurn}, lowerMsgs pre u i ms = some ts →
      ∃ pre' u', ∀ ns, lowerMsgs pre u i (ms ++ ns) =
        (lowerMsgs pre' u' (i + ms.length) ns).map (ts ++ ·)
  | [], pre, u, i, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    refine ⟨pre, u, fun ns => ?_⟩
    simp
  | m :: ms, pre, u, i, ts, h => by
    simp only [lowerMsgs] at h
    cases hm : lowerMsg pre u i m with
    | none => rw [hm] at h; cases h
    | some t0 =>
      rw [hm, Option.bind_some] at h
      cases hr : lowerMsgs [] (!u) (i + 1) ms with
      | none => rw [hr] at h; cases h
      | some ts' =>
        rw [hr, Option.map_some, Option.some.injEq] at h
        subst h
        obtain ⟨pre', u', hap⟩ := lowerMsgs_append hr
        refine ⟨pre', u', fun ns => ?_⟩
        have e : i + (ms.length + 1) = i + 1 + ms.length := by omega
        simp only [List.cons_append, lowerMsgs, hm, Option.bind_some, hap ns, List.length_cons, e,
          Option.map_map]
        rfl

theorem headOf_spec {c : Conversation} {y : Chars × List Message × Nat}
    (h : headOf c = some y) :
    ∃ hd, c.messages = hd ++ y.2.1 ∧ hd.length = y.2.2 ∧ ∀ m ∈ hd, m.role ≠ .assistant := by
  rcases c with ⟨ms, tools, g⟩
  cases ms with
  | nil =>
    simp only [headOf, Option.some.injEq] at h
    subst h
    exact ⟨[], rfl, rfl, fun m hm => by cases hm⟩
  | cons m ms =>
    simp only [headOf] at h
    split at h
    · rename_i hsys
      split at h
      · rename_i s x xs hc
        simp only [Option.some.injEq] at h
        subst h
        refine ⟨[m], rfl, rfl, ?_⟩
        intro m' hm' e
        simp only [List.mem_singleton] at hm'
        subst hm'
        rw [e] at hsys
        cases hsys
      · cases h
    · simp only [Option.some.injEq] at h
      subst h
      exact ⟨[], rfl, rfl, fun m hm => by cases hm⟩

theorem headOf_append {ms ns : List Message} {tools : Option (List Json)} {g g' : Bool}
    {y : Chars × List Message × Nat} (hms : ms ≠ [])
    (h : headOf ⟨ms, tools, g⟩ = some y) :
    headOf ⟨ms ++ ns, tools, g'⟩ = some (y.1, y.2.1 ++ ns, y.2.2) := by
  cases ms with
  | nil => exact absurd rfl hms
  | cons m ms =>
    simp only [headOf, List.cons_append] at h ⊢
    split at h
    · rename_i hsys
      rw [if_pos hsys]
      split at h
      · rename_i s x xs hc
        simp only [Option.some.injEq] at h
        subst h
        simp only [hc, List.cons_append]
      · cases h
    · rename_i hsys
      rw [if_neg hsys]
      simp only [Option.some.injEq] at h
      subst h
      rfl

/-! ## Layouts of extensions -/

/-- The layout of a lowered conversation with more turns. -/
theorem layout_append (f : GemmaFmt) (turns ts2 : List GTurn) (p : Option Nat) :
    layout f ⟨turns ++ ts2, p⟩ =
      layout f ⟨turns, none⟩ ++ (ts2.flatMap (turnItems f) ++ promptOf f p) := by
  simp [layout_eq, promptOf, List.flatMap_append, List.append_assoc]

theorem syms_turnItems (f : GemmaFmt) (t : GTurn) :
    ∃ r, syms (turnItems f t) = .ctrl f.ids.startTurn :: r := by
  cases t <;> exact ⟨_, rfl⟩

theorem syms_tail_head (f : GemmaFmt) (ts : List GTurn) (p : Option Nat) :
    ∀ x ∈ (syms (ts.flatMap (turnItems f) ++ promptOf f p)).head?, x.isCh = false := by
  intro x hx
  cases ts with
  | cons t ts =>
    obtain ⟨r, e⟩ := syms_turnItems f t
    simp only [List.flatMap_cons, List.append_assoc, syms_append, e, List.cons_append,
      List.head?_cons, Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  | nil =>
    cases p with
    | none => cases hx
    | some o =>
      simp only [List.flatMap_nil, List.nil_append, promptOf, promptItems, header, syms_cons,
        ctl, Piece.syms, List.cons_append, List.head?_cons, Option.mem_def,
        Option.some.injEq] at hx
      subst hx
      rfl

/-- The lowering of a conversation that lowers, with `tools` absent. -/
theorem lower_some {f : GemmaFmt} {c : Conversation} {l : GConv} (h : lower f c = some l) :
    c.tools.isSome = false ∧ ∃ y, headOf c = some y ∧ ∃ ts,
      lowerMsgs y.1 true y.2.2 y.2.1 = some ts ∧ ts.all (turnOk f) = true ∧
        l = ⟨ts, if c.addGenerationPrompt then some c.messages.length else none⟩ := by
  unfold lower at h
  split at h
  · cases h
  · rename_i htools
    refine ⟨by simpa using htools, ?_⟩
    cases hh : headOf c with
    | none => rw [hh] at h; cases h
    | some y =>
      rw [hh, Option.bind_some] at h
      refine ⟨y, rfl, ?_⟩
      obtain ⟨pre, rest, i⟩ := y
      dsimp only at h ⊢
      cases hts : lowerMsgs pre true i rest with
      | none => rw [hts] at h; cases h
      | some ts =>
        rw [hts, Option.bind_some] at h
        split at h
        · rename_i hok
          simp only [Option.some.injEq] at h
          exact ⟨ts, rfl, hok, h.symm⟩
        · cases h

/-! ## The main theorems -/

/-- Gemma 3 never rewrites history: the render of a conversation is a prefix of the render of
any extension of it (ids, mask and owners). -/
theorem prefix_stable (f : GemmaFmt) (codec : Codec) (ms ns : List Message)
    (tools : Option (List Json)) (g : Bool) (l l' : GConv) (hms : ms ≠ [])
    (hl : lower f ⟨ms, tools, false⟩ = some l) (hl' : lower f ⟨ms ++ ns, tools, g⟩ = some l') :
    encodeItems codec (layout f l) <+: encodeItems codec (layout f l') := by
  obtain ⟨-, y, hy, ts, hts, -, rfl⟩ := lower_some hl
  obtain ⟨-, y', hy', ts', hts', -, rfl⟩ := lower_some hl'
  rw [headOf_append hms hy, Option.some.injEq] at hy'
  subst hy'
  obtain ⟨pre', u', hap⟩ := lowerMsgs_append hts
  rw [hap ns] at hts'
  obtain ⟨ts2, -, rfl⟩ := Option.map_eq_some_iff.mp hts'
  simp only [Bool.false_eq_true, ↓reduceIte]
  rw [layout_append, encodeItems_append _ _ _ (syms_tail_head f ts2 _)]
  exact List.prefix_append _ _

theorem lowerMsg_sampled {pre : Chars} {u : Bool} {i : Nat} {ts : List Token} {t : GTurn}
    (h : lowerMsg pre u i ⟨.assistant, [.sampled ts]⟩ = some t) : t = .sampled ts i := by
  unfold lowerMsg at h
  cases u
  · rw [if_neg (by decide)] at h
    simp only [Option.some.injEq] at h
    exact h.symm
  · rw [if_pos rfl] at h
    cases h

/-- Sampled tokens, rendered. -/
theorem encodeItems_toks (c : Codec) (ts : List Token) (o : Nat) :
    encodeItems c [⟨.toks ts, ⟨o, true⟩⟩] = ts.map (fun t => (⟨t, .toks, o, true⟩ : Cell)) := by
  rw [encodeItems_of_not_isCh]
  · simp [asyms, Piece.syms, Sym.token, Sym.src, Function.comp_def]
  · intro s hs
    simp only [syms_cons, Piece.syms, syms_nil, List.append_nil, List.mem_map] at hs
    obtain ⟨t, -, rfl⟩ := hs
    rfl

/-- `<end_of_turn>` and the `\n` after it, rendered. -/
theorem encodeItems_eot_nl (c : Codec) (e o : Nat) :
    encodeItems c [ctl e o true, txt ['\n'] o false] =
      ⟨e, .ctrl, o, true⟩ :: encodeRunCells c [(.ch '\n', ⟨o, false⟩)] := by
  simp only [encodeItems, asyms, ctl, txt, Piece.syms, List.flatMap_cons, List.flatMap_nil,
    List.map_cons, List.map_nil, List.cons_append, List.nil_append, List.append_nil]
  rw [splitBy_cons_of_true _ _ _ rfl, splitBy_cons_of_false _ _ _ rfl]
  have h0 : splitBy (fun x : Sym × Ann => !x.1.isCh) [] = ([], []) := rfl
  simp [h0, encodeRunCells_nil, Sym.token, Sym.src]

/-- The sampled tokens, `<end_of_turn>` and the `\n` after it, rendered. -/
theorem encodeItems_sampled_tail (c : Codec) (ts : List Token) (e o : Nat) :
    encodeItems c [⟨.toks ts, ⟨o, true⟩⟩, ctl e o true, txt ['\n'] o false] =
      ts.map (fun t => (⟨t, .toks, o, true⟩ : Cell)) ++ [⟨e, .ctrl, o, true⟩] ++
        encodeRunCells c [(.ch '\n', ⟨o, false⟩)] := by
  have hh : ∀ x ∈ (syms [ctl e o true, txt ['\n'] o false]).head?, x.isCh = false := by
    intro x hx
    simp only [syms_cons, ctl, txt, Piece.syms, List.cons_append, List.head?_cons,
      Option.mem_def, Option.some.injEq] at hx
    subst hx
    rfl
  rw [show [⟨.toks ts, ⟨o, true⟩⟩, ctl e o true, txt ['\n'] o false] =
      [⟨.toks ts, ⟨o, true⟩⟩] ++ [ctl e o true, txt ['\n'] o false] from rfl,
    encodeItems_append c _ _ hh, encodeItems_toks, encodeItems_eot_nl]
  simp

/-- Inference and training agree: the render with the generation prompt, then the tokens the
policy sampled (learned, owned by the new message), then `<end_of_turn>` (learned) and the `\n`
after it (not learned), is the render of the conversation with the sampled turn appended. -/
theorem prompt_prefix (f : GemmaFmt) (codec : Codec) (ms : List Message)
    (tools : Option (List Json)) (ts : List Token) (l l' : GConv) (hms : ms ≠ [])
    (hl : lower f ⟨ms, tools, true⟩ = some l)
    (hl' : lower f ⟨ms ++ [⟨.assistant, [.sampled ts]⟩], tools, false⟩ = some l') :
    encodeItems codec (layout f l') =
      encodeItems codec (layout f l) ++ ts.map (fun t => ⟨t, .toks, ms.length, true⟩) ++
        [⟨f.ids.endTurn, .ctrl, ms.length, true⟩] ++
          encodeRunCells codec [(.ch '\n', ⟨ms.length, false⟩)] := by
  obtain ⟨-, y, hy, tl, htl, -, rfl⟩ := lower_some hl
  obtain ⟨-, y', hy', tl', htl', -, rfl⟩ := lower_some hl'
  obtain ⟨hd, e, hlen, -⟩ := headOf_spec hy
  rw [headOf_append hms hy, Option.some.injEq] at hy'
  subst hy'
  obtain ⟨pre', u', hap⟩ := lowerMsgs_append htl
  rw [hap] at htl'
  obtain ⟨ts2, h2, rfl⟩ := Option.map_eq_some_iff.mp htl'
  have hn : y.2.2 + y.2.1.length = ms.length := by
    simp only at e
    rw [e, List.length_append, hlen]
  rw [hn] at h2
  simp only [lowerMsgs] at h2
  cases hm : lowerMsg pre' u' ms.length ⟨.assistant, [.sampled ts]⟩ with
  | none => rw [hm] at h2; cases h2
  | some t =>
    rw [hm, Option.bind_some] at h2
    have ht := lowerMsg_sampled hm
    subst ht
    simp only [Option.map_some, Option.some.injEq] at h2
    subst h2
    simp only [Bool.false_eq_true, ↓reduceIte]
    have e1 : layout f ⟨tl ++ [.sampled ts ms.length], none⟩ =
        layout f ⟨tl, some ms.length⟩ ++
          [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.endTurn ms.length true,
            txt ['\n'] ms.length false] := by
      simp [layout_eq, promptOf, turnItems, footer, List.flatMap_append, List.append_assoc]
    have hhd : ∀ x ∈ (syms [⟨.toks ts, ⟨ms.length, true⟩⟩, ctl f.ids.endTurn ms.length true,
        txt ['\n'] ms.length false]).head?, x.isCh = false := by
      intro x hx
      cases ts with
      | nil =>
        simp only [syms_cons, ctl, txt, Piece.syms, List.map_nil, syms_nil, List.nil_append,
          List.head?_cons, Option.mem_def, Option.some.injEq, List.cons_append] at hx
        subst hx
        rfl
      | cons t ts =>
        simp only [syms_cons, ctl, Piece.syms, List.map_cons, List.cons_append, List.head?_cons,
          Option.mem_def, Option.some.injEq] at hx
        subst hx
        rfl
    rw [e1, encodeItems_append codec _ _ hhd, encodeItems_sampled_tail]
    simp only [List.append_assoc]

theorem turnItems_learn (f : GemmaFmt) (t : GTurn) :
    ∀ it ∈ turnItems f t, it.ann.learn = true → t.learned = true ∧ it.ann.owner = t.owner := by
  cases t with
  | user pre p o => cases p <;> simp [turnItems, header, footer, ctl, txt, pay]
  | model p o =>
    cases p <;> simp [turnItems, header, footer, ctl, txt, pay, GTurn.learned, GTurn.owner]
  | sampled ts o =>
    simp [turnItems, promptItems, header, footer, ctl, txt, GTurn.learned, GTurn.owner]

theorem prompt_unlearned (f : GemmaFmt) (p : Option Nat) :
    ∀ it ∈ promptOf f p, it.ann.learn = false := by
  cases p <;> simp [promptOf, promptItems, header, ctl, txt]

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (f : GemmaFmt) (codec : Codec) (c : Conversation) (l : GConv)
    (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  obtain ⟨-, y, hy, ts, hts, -, rfl⟩ := lower_some hl
  obtain ⟨hd, e, hlen, -⟩ := headOf_spec hy
  rw [layout_eq] at hit
  simp only [List.mem_append, List.mem_flatMap] at hit
  rcases hit with (hit | ⟨t, ht, hit⟩) | hit
  · simp only [List.mem_singleton] at hit
    rw [hit] at hlearn
    cases hlearn
  · obtain ⟨htl, hto⟩ := turnItems_learn f t it hit hlearn.symm
    obtain ⟨j, m, hj, ho, hrole⟩ := lowerMsgs_spec hts t ht
    refine ⟨m, ?_, hrole htl⟩
    rw [hown, hto, ho, e, List.getElem?_append_right (by omega)]
    simpa [hlen] using hj
  · rw [prompt_unlearned f _ it hit] at hlearn
    cases hlearn

end Verified.Gemma

end
