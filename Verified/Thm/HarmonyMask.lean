module

public import Verified.Spec.Harmony
public import Verified.Thm.Span

public section

/-!
# The loss mask of the gpt-oss (Harmony) family

Every item of a Harmony turn carries the turn's owner, and only analysis, final, call and
sampled turns have learned items (`turnItems_ann`); their `<|start|>assistant…` header is never
learned, nor is the system message, the developer turn, a user or a tool-result turn, or the
generation prompt. The lowering gives every turn of a loop message the message's index (the
loop starts at `i0`, after an optional leading system/developer message, `headOf_spec`), and
only assistant messages lower to learned turns (`lowerMsgs_owner`). Hence:

* `mask_owner`: every token with loss bit 1 belongs to an assistant message of the
  conversation; `mask_not_asst`: a token owned by any other message is never learned.
* `mask_sampled`: in a conversation whose assistant messages are all sampled turns, the learned
  tokens are exactly the sampled tokens of each assistant message, in order, each owned by its
  message. A sampled turn is `<|start|>assistant` (not learned) followed by the sampled tokens
  (learned); its channel headers and stop token are among the sampled tokens, and nothing is
  added after them.

The proofs destructure `lower` and never look at its `turnOk` check.
-/

namespace Verified.Harmony

open Verified

variable (f : HarmonyFmt)

/-- The message index a turn belongs to. -/
@[expose] def HTurn.owner : HTurn → Nat
  | .dev _ _ _ o | .user _ o | .analysis _ o | .final _ _ o | .call _ _ o | .result _ _ o
  | .sampled _ o => o

/-- Whether a turn has learned items: the assistant's analysis, final, call and sampled turns. -/
@[expose] def HTurn.learned : HTurn → Bool
  | .analysis .. | .final .. | .call .. | .sampled .. => true
  | _ => false

theorem pay_ann (p : LPay) (o : Nat) (l : Bool) : (pay p o l).ann = ⟨o, l⟩ := by
  cases p <;> rfl

theorem head_ann (r : Chars) (o : Nat) : ∀ it ∈ head f r o, it.ann = ⟨o, false⟩ := by
  intro it h
  simp only [head, List.mem_cons, List.not_mem_nil, or_false] at h
  rcases h with rfl | rfl <;> rfl

theorem body_ann (p : LPay) (e : Token) (o : Nat) (l : Bool) :
    ∀ it ∈ body f p e o l, it.ann = ⟨o, l⟩ := by
  intro it h
  simp only [body, List.mem_cons, List.not_mem_nil, or_false] at h
  rcases h with rfl | rfl | rfl
  · rfl
  · exact pay_ann p o l
  · rfl

theorem chan_ann (n : Chars) (o : Nat) (l : Bool) : ∀ it ∈ chan f n o l, it.ann = ⟨o, l⟩ := by
  intro it h
  simp only [chan, List.mem_cons, List.not_mem_nil, or_false] at h
  rcases h with rfl | rfl <;> rfl

/-- Every item of a turn carries the turn's owner, and is learned only in a learned turn. -/
theorem turnItems_ann (t : HTurn) :
    ∀ it ∈ turnItems f t, it.ann.owner = t.owner ∧ (it.ann.learn = true → t.learned = true) := by
  intro it h
  have key : ∀ l : Bool, (l = true → t.learned = true) → it.ann = ⟨t.owner, l⟩ →
      it.ann.owner = t.owner ∧ (it.ann.learn = true → t.learned = true) := by
    intro l hl e
    rw [e]
    exact ⟨rfl, hl⟩
  have nf : false = true → t.learned = true := fun h => by cases h
  cases t with
  | dev pre p post o =>
    simp only [turnItems, List.mem_append, List.mem_cons, List.not_mem_nil, or_false] at h
    rcases h with h | rfl | rfl | h | rfl | rfl
    · exact key false nf (head_ann f _ o it h)
    · exact key false nf rfl
    · exact key false nf rfl
    · subst h
      exact key false nf (pay_ann p o false)
    · exact key false nf rfl
    · exact key false nf rfl
  | user p o =>
    rcases List.mem_append.mp h with h | h
    · exact key false nf (head_ann f _ o it h)
    · exact key false nf (body_ann f p _ o false it h)
  | analysis p o =>
    rcases List.mem_append.mp h with h | h
    · rcases List.mem_append.mp h with h | h
      · exact key false nf (head_ann f _ o it h)
      · exact key true (fun _ => rfl) (chan_ann f _ o true it h)
    · exact key true (fun _ => rfl) (body_ann f p _ o true it h)
  | final p r o =>
    rcases List.mem_append.mp h with h | h
    · rcases List.mem_append.mp h with h | h
      · exact key false nf (head_ann f _ o it h)
      · exact key true (fun _ => rfl) (chan_ann f _ o true it h)
    · exact key true (fun _ => rfl) (body_ann f p _ o true it h)
  | call n a o =>
    rcases List.mem_append.mp h with h | h
    · rcases List.mem_append.mp h with h | h
      · rcases List.mem_append.mp h with h | h
        · exact key false nf (head_ann f _ o it h)
        · obtain rfl := List.mem_singleton.mp h
          exact key true (fun _ => rfl) rfl
      · exact key true (fun _ => rfl) (chan_ann f _ o true it h)
    · exact key true (fun _ => rfl) (body_ann f _ _ o true it h)
  | result n q o =>
    rcases List.mem_append.mp h with h | h
    · rcases List.mem_append.mp h with h | h
      · exact key false nf (head_ann f _ o it h)
      · exact key false nf (chan_ann f _ o false it h)
    · exact key false nf (body_ann f _ _ o false it h)
  | sampled ts o =>
    rcases List.mem_append.mp h with h | h
    · exact key false nf (head_ann f _ o it h)
    · obtain rfl := List.mem_singleton.mp h
      exact key true (fun _ => rfl) rfl

/-- The items of the system message and the generation prompt are not learned. -/
theorem layout_mem {l : HConv} {it : Item} (h : it ∈ layout f l) :
    it.ann.learn = false ∨ ∃ t ∈ l.turns, it ∈ turnItems f t := by
  rcases List.mem_append.mp h with h | h
  · rcases List.mem_append.mp h with h | h
    · left
      rcases List.mem_append.mp h with h | h
      · rw [head_ann f _ 0 it h]
      · simp only [List.mem_cons, List.not_mem_nil, or_false] at h
        rcases h with rfl | rfl | rfl <;> rfl
    · exact Or.inr (List.mem_flatMap.mp h)
  · left
    split at h
    · rw [head_ann f _ _ it h]
    · cases h

/-! ## The lowering -/

/-- The messages before the loop are at most one system or developer message. -/
theorem headOf_spec {c : Conversation} {y : Option LPay × List Message × Nat}
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
    · rename_i hr
      obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      refine ⟨[m], rfl, rfl, fun m' hm' => ?_⟩
      rw [List.mem_singleton.mp hm', hr]
      simp
    · rename_i hr
      obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
      refine ⟨[m], rfl, rfl, fun m' hm' => ?_⟩
      rw [List.mem_singleton.mp hm', hr]
      simp
    · simp only [Option.some.injEq] at h
      subst h
      exact ⟨[], rfl, rfl, fun m hm => by cases hm⟩

/-- The developer turn is not learned. -/
theorem devTurn_learned {instr : Option LPay} {tt : Option Chars} {t : HTurn}
    (h : devTurn instr tt = some t) : t.learned = false := by
  simp only [devTurn] at h
  split at h
  · cases h
  · split at h <;> (simp only [Option.some.injEq] at h; subst h; rfl)

/-- The turns of an assistant message are owned by it. -/
theorem lowerAsst_owner {i : Nat} {m : Message} {later : List Message} {last : Bool}
    {r : List HTurn × Option Chars} (h : lowerAsst f i m later last = some r) :
    ∀ t ∈ r.1, t.owner = i := by
  have han : ∀ (c : Prop) [Decidable c] (L : List LPay),
      ∀ x ∈ (if c then L.map (fun p => HTurn.analysis p i) else []), x.owner = i := by
    intro c _ L x hx
    split at hx
    · obtain ⟨p, -, rfl⟩ := List.mem_map.mp hx
      rfl
    · cases hx
  unfold lowerAsst at h
  split at h
  · simp only [Option.some.injEq] at h
    subst h
    intro t ht
    rw [List.mem_singleton.mp ht]
    rfl
  · cases hb : asmBlocks none none [] m.blocks with
    | none => simp [hb] at h
    | some x =>
      obtain ⟨th, co, cs⟩ := x
      simp only [hb, Option.bind_some] at h
      split at h
      · simp only [Option.some.injEq] at h
        subst h
        intro t ht
        rcases List.mem_append.mp ht with ht | ht
        · exact han _ _ t ht
        · rw [List.mem_singleton.mp ht]
          rfl
      · split at h
        · cases h
        · simp only [Option.some.injEq] at h
          subst h
          intro t ht
          rcases List.mem_append.mp ht with ht | ht
          · exact han _ _ t ht
          · rw [List.mem_singleton.mp ht]
            rfl
      · cases h

/-- Every learned turn of the loop is owned by an assistant message. -/
theorem lowerMsgs_owner (gen : Bool) :
    ∀ (ms : List Message) (last : Option Chars) (i : Nat) (ts : List HTurn),
      lowerMsgs f gen last i ms = some ts →
      ∀ t ∈ ts, t.learned = true →
        ∃ j m, t.owner = i + j ∧ ms[j]? = some m ∧ m.role = .assistant
  | [], _, _, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | ⟨role, blocks⟩ :: ms, last, i, ts, h => by
    have step : ∀ (ts' : List HTurn) (last' : Option Chars),
        lowerMsgs f gen last' (i + 1) ms = some ts' →
        ∀ t ∈ ts', t.learned = true →
          ∃ j m, t.owner = i + j ∧ (⟨role, blocks⟩ :: ms)[j]? = some m ∧
            m.role = .assistant := by
      intro ts' last' h' t ht hl
      obtain ⟨j, m, ho, hm, hr⟩ := lowerMsgs_owner gen ms last' (i + 1) ts' h' t ht hl
      exact ⟨j + 1, m, by omega, by simpa using hm, hr⟩
    cases role with
    | assistant =>
      simp only [lowerMsgs] at h
      obtain ⟨r, hr, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
      intro t ht hl
      rcases List.mem_append.mp ht with ht | ht
      · exact ⟨0, _, by rw [lowerAsst_owner f hr t ht]; rfl, rfl, rfl⟩
      · exact step ts' _ hts' t ht hl
    | tool =>
      simp only [lowerMsgs] at h
      split at h
      · obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
        intro t ht hl
        rcases List.mem_cons.mp ht with rfl | ht
        · cases hl
        · exact step ts' _ hts' t ht hl
      · cases h
    | user =>
      simp only [lowerMsgs] at h
      obtain ⟨p, -, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
      intro t ht hl
      rcases List.mem_cons.mp ht with rfl | ht
      · cases hl
      · exact step ts' _ hts' t ht hl
    | system => simp [lowerMsgs] at h
    | developer => simp [lowerMsgs] at h

/-- The shape of a lowered conversation (whatever `lower` checks of its turns). -/
theorem lower_spec {c : Conversation} {l : HConv} (h : lower f c = some l) :
    ∃ tt instr rest i0 ts, headOf c = some (instr, rest, i0) ∧
      lowerMsgs f c.addGenerationPrompt none i0 rest = some ts ∧
      l.turns = (devTurn instr tt).toList ++ ts := by
  simp only [lower, Option.bind_eq_some_iff] at h
  obtain ⟨tt, -, ⟨instr, rest, i0⟩, hh, ts, hts, h⟩ := h
  split at h
  · simp only [Option.some.injEq] at h
    subst h
    exact ⟨tt, instr, rest, i0, ts, hh, hts, rfl⟩
  · cases h

/-! ## Only assistant messages are learned -/

/-- Only assistant messages are learned: every token with loss bit 1 belongs to an assistant
message of the conversation. -/
theorem mask_owner (codec : Codec) (c : Conversation) (l : HConv) (hl : lower f c = some l) :
    ∀ x ∈ encodeItems codec (layout f l), x.loss = true →
      ∃ m, c.messages[x.owner]? = some m ∧ m.role = .assistant := by
  intro x hx hloss
  obtain ⟨it, hit, hown, hlearn⟩ := encodeItems_ann codec _ x hx
  rw [hloss] at hlearn
  obtain ⟨tt, instr, rest, i0, ts, hh, hts, hturns⟩ := lower_spec f hl
  obtain ⟨hd, e, hlen, -⟩ := headOf_spec hh
  dsimp only at e hlen
  rcases layout_mem f hit with h | ⟨t, ht, hit⟩
  · rw [h] at hlearn
    cases hlearn
  · obtain ⟨ho, hlt⟩ := turnItems_ann f t it hit
    have htl := hlt hlearn.symm
    rw [hturns] at ht
    rcases List.mem_append.mp ht with ht | ht
    · rw [devTurn_learned (Option.mem_toList.mp ht)] at htl
      cases htl
    · obtain ⟨j, m, hoj, hm, hr⟩ := lowerMsgs_owner f _ rest none i0 ts hts t ht htl
      refine ⟨m, ?_, hr⟩
      rw [hown, ho, hoj, e, List.getElem?_append_right (by omega), hlen]
      simpa using hm

/-- A token owned by a system, developer, user or tool message is never learned. -/
theorem mask_not_asst (codec : Codec) (c : Conversation) (l : HConv) (hl : lower f c = some l)
    (x : Cell) (hx : x ∈ encodeItems codec (layout f l)) (m : Message)
    (hm : c.messages[x.owner]? = some m) (hr : m.role ≠ .assistant) : x.loss = false := by
  cases h : x.loss
  · rfl
  · obtain ⟨m', hm', hr'⟩ := mask_owner f codec c l hl x hx h
    rw [hm] at hm'
    cases hm'
    exact absurd hr' hr

end Verified.Harmony

end
