module

public import Verified.Thm.MistralPrefix
public import Verified.Thm.QwenParse

public section

/-!
# The Mistral family: what lowering guarantees, and the v7 call list read back

* `wfFacts`: the distinctness facts of the control ids the readers use, from `MistralIds.wf`.
* `lower_good`: every turn of a lowered conversation passes `turnOk` and is as lowering writes
  it (`TGood`): every call has non-empty arguments (`callsOf` writes `{}` for empty ones), an id
  that `idOk` accepts in v7/v11 and none in v13; every v7/v11 result writes a non-empty id (the
  id of a pending call, `PendOk`); v13 results write none.
* `unCallsJson_read`: the v7 JSON call list reads back. Names and ids hold no `"` (`nameOk`,
  `idOk`), and arguments that `scanOk` accepts scan to exactly themselves before the `, "id"`
  that follows them (`scanVal_ok`): `scanVal` is a left-to-right scanner, so stopping at the
  `,` after `a` in `a ++ [',']` means stopping there in `a ++ ',' :: r` whatever `r` is
  (`scanVal_ext`).
-/

namespace Verified.Mistral

open Verified

variable (f : MistralFmt)

/-! ## Distinct control ids -/

/-- The facts about the ids the readers use, from `MistralIds.wf`. -/
structure WfFacts (i : MistralIds) (v : Version) : Prop where
  so_t : i.sysOpen ≠ i.tools
  so_i : i.sysOpen ≠ i.inst
  so_r : i.sysOpen ≠ i.results
  t_i : i.tools ≠ i.inst
  t_r : i.tools ≠ i.results
  i_r : i.inst ≠ i.results
  c_so : i.calls ≠ i.sysOpen
  c_t : i.calls ≠ i.tools
  c_i : i.calls ≠ i.inst
  c_r : i.calls ≠ i.results
  e_so : i.eos ≠ i.sysOpen
  e_t : i.eos ≠ i.tools
  e_i : i.eos ≠ i.inst
  e_r : i.eos ≠ i.results
  e_c : i.eos ≠ i.calls
  tc : v ≠ .v13 → ∃ tc, i.toolContent = some tc
  args : v ≠ .v7 → ∃ a, i.args = some a
  cid : v = .v11 → ∃ c, i.callId = some c

theorem wfFacts {i : MistralIds} {v : Version} (hf : i.wf v = true) : WfFacts i v := by
  unfold MistralIds.wf at hf
  simp only [Bool.and_eq_true] at hf
  obtain ⟨hn, hv⟩ := hf
  have hn := Qwen.nodup_of_nodupB hn
  unfold MistralIds.named at hn
  refine ⟨Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), Qwen.tok_ne (fun h => by simp [h] at hn),
    Qwen.tok_ne (fun h => by simp [h] at hn), ?_, ?_, ?_⟩
  · intro h13
    cases v
    · exact Option.isSome_iff_exists.mp hv
    · simp only [Bool.and_eq_true] at hv
      exact Option.isSome_iff_exists.mp hv.2
    · exact absurd rfl h13
  · intro h7
    cases v
    · exact absurd rfl h7
    · simp only [Bool.and_eq_true] at hv
      exact Option.isSome_iff_exists.mp hv.1.1
    · exact Option.isSome_iff_exists.mp hv
  · intro h11
    subst h11
    simp only [Bool.and_eq_true] at hv
    exact Option.isSome_iff_exists.mp hv.1.2

/-! ## What lowering guarantees -/

/-- A call as lowering writes it: non-empty arguments; no id in v13, an accepted one in
v7/v11. -/
@[expose] def CallGood (k : MCall) : Prop :=
  k.2.1 ≠ [] ∧ (f.version = .v13 → k.2.2 = none) ∧
    (f.version ≠ .v13 → ∃ i, k.2.2 = some i ∧ idOk i = true)

/-- A turn as lowering writes it. -/
@[expose] def TGood : MTurn → Prop
  | .assistant _ cs _ => ∀ k ∈ cs, CallGood f k
  | .result i _ _ => (f.version = .v13 → i = none) ∧ (f.version ≠ .v13 → ∃ x, i = some x ∧ x ≠ [])
  | _ => True

/-- The ids of the pending calls are non-empty. -/
@[expose] def PendOk (pend : List (Option Chars)) : Prop := ∀ y ∈ pend, ∀ x, y = some x → x ≠ []

theorem ne_nil_of_idOk {i : Chars} (h : idOk i = true) : i ≠ [] := by
  intro e
  subst e
  simp [idOk] at h

theorem callsOf_args : ∀ (bs : List Block) (cs : List MCall), callsOf bs = some cs →
    ∀ k ∈ cs, k.2.1 ≠ [] := by
  intro bs
  induction bs with
  | nil =>
    intro cs h
    simp only [callsOf, Option.some.injEq] at h
    subst h
    simp
  | cons b bs ih =>
    intro cs h
    cases b with
    | toolCall n a i =>
      simp only [callsOf, Option.map_eq_some_iff] at h
      obtain ⟨cs', h', rfl⟩ := h
      intro k hk
      rcases List.mem_cons.mp hk with rfl | hk
      · by_cases ha : a.isEmpty = true
        · simp [ha, emptyObj]
        · simp only [ha, Bool.false_eq_true, if_false]
          intro e
          subst e
          simp at ha
      · exact ih cs' h' k hk
    | plain p => simp [callsOf] at h
    | reasoning p => simp [callsOf] at h
    | sampled ts => simp [callsOf] at h

theorem bodyOf_args {bs : List Block} {p : LPay} {cs : List MCall} (h : bodyOf bs = some (p, cs)) :
    ∀ k ∈ cs, k.2.1 ≠ [] := by
  unfold bodyOf at h
  split at h
  · obtain ⟨cs', h', e⟩ := Option.map_eq_some_iff.mp h
    cases e
    exact callsOf_args _ _ h'
  · obtain ⟨cs', h', e⟩ := Option.map_eq_some_iff.mp h
    cases e
    exact callsOf_args _ _ h'

theorem callIds_good {cs cs' : List MCall} (h : callIds f cs = some cs')
    (ha : ∀ k ∈ cs, k.2.1 ≠ []) : ∀ k ∈ cs', CallGood f k := by
  unfold callIds at h
  cases hv : f.version with
  | v13 =>
    rw [hv] at h
    simp only [Option.some.injEq] at h
    subst h
    intro k hk
    obtain ⟨k', hk', rfl⟩ := List.mem_map.mp hk
    exact ⟨ha k' hk', fun _ => rfl, fun h => absurd hv h⟩
  | v7 | v11 =>
    rw [hv] at h
    try simp only at h
    split at h
    · rename_i hc
      simp only [Option.some.injEq] at h
      subst h
      simp only [Bool.and_eq_true, List.all_eq_true] at hc
      intro k hk
      refine ⟨ha k hk, (fun h => by rw [hv] at h; cases h), fun _ => ?_⟩
      have := hc.1 k hk
      revert this
      cases k.2.2 with
      | none => simp
      | some i => intro hi; exact ⟨i, rfl, hi⟩
    · cases h

theorem lowerMsg_good {tools : Option Chars} {pend : List (Option Chars)} {i : Nat} {m : Message}
    {t : MTurn} (h : lowerMsg f tools pend.head? i m = some t) (hp : PendOk pend) :
    TGood f t := by
  unfold lowerMsg at h
  cases hr : m.role with
  | system =>
    rw [hr] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    trivial
  | user =>
    rw [hr] at h
    obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
    trivial
  | developer => rw [hr] at h; cases h
  | assistant =>
    rw [hr] at h
    simp only at h
    split at h
    · cases h
      trivial
    · obtain ⟨⟨p, cs⟩, hb, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨cs', hc, h⟩ := Option.bind_eq_some_iff.mp h
      split at h
      · cases h
      · cases h
        exact callIds_good f hc (bodyOf_args hb)
  | tool =>
    rw [hr] at h
    simp only at h
    cases hv : f.version <;> simp only [hv] at h
    all_goals first
      | (obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
         exact ⟨fun _ => rfl, fun h' => absurd hv h'⟩)
      | skip
    all_goals
      cases hh : pend.head? with
      | none => rw [hh] at h; cases h
      | some y =>
        cases y with
        | none => rw [hh] at h; cases h
        | some x =>
          rw [hh] at h
          obtain ⟨p, -, rfl⟩ := Option.map_eq_some_iff.mp h
          refine ⟨(fun h' => by rw [hv] at h'; cases h'), fun _ => ⟨x, rfl, ?_⟩⟩
          exact hp _ (List.mem_of_head? hh) x rfl

theorem pending_ok {t : MTurn} {pend : List (Option Chars)} (ht : TGood f t) (hp : PendOk pend) :
    PendOk (t.pending pend) := by
  cases t with
  | assistant p cs o =>
    intro y hy x hx
    obtain ⟨k, hk, rfl⟩ := List.mem_map.mp hy
    obtain ⟨-, h13, hid⟩ := ht k hk
    by_cases hv : f.version = .v13
    · rw [h13 hv] at hx
      cases hx
    · obtain ⟨i, hi, hok⟩ := hid hv
      rw [hi] at hx
      cases hx
      exact ne_nil_of_idOk hok
  | result i p o => exact fun y hy => hp y (List.mem_of_mem_tail hy)
  | system p o => intro y hy; cases hy
  | user j p o => intro y hy; cases hy
  | sampled ts o => intro y hy; cases hy

theorem lowerMsgs_good (tools : Option Chars) (pos : Option Nat) :
    ∀ (ms : List Message) (prev : Option Role) (prevT : Option MTurn) (pend : List (Option Chars))
      (i : Nat) (ts : List MTurn), lowerMsgs f tools pos prev prevT pend i ms = some ts →
      PendOk pend → ∀ t ∈ ts, TGood f t := by
  intro ms
  induction ms with
  | nil =>
    intro prev prevT pend i ts h _
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | cons m ms ih =>
    intro prev prevT pend i ts h hp
    simp only [lowerMsgs] at h
    obtain ⟨-, h⟩ := ite_none_eq_some h
    cases hm : lowerMsg f (if pos = some i then tools else none) pend.head? i m with
    | none => rw [hm] at h; cases h
    | some t =>
      rw [hm, Option.bind_some] at h
      obtain ⟨-, h⟩ := ite_none_eq_some h
      obtain ⟨ts', hts, rfl⟩ := Option.map_eq_some_iff.mp h
      have ht := lowerMsg_good f hm hp
      intro t' ht'
      rcases List.mem_cons.mp ht' with rfl | ht'
      · exact ht
      · exact ih _ _ _ _ _ hts (pending_ok f ht hp) t' ht'

/-- Every turn of a lowered conversation is as lowering writes it and passes `turnOk`. -/
theorem lower_good {c : Conversation} {l : MConv} (h : lower f c = some l) :
    ∀ t ∈ l.turns, TGood f t ∧ turnOk f t = true := by
  obtain ⟨ms, tj, g⟩ := c
  have h' : (toolsText tj).bind (fun tools =>
      (lowerMsgs f tools (if tools.isSome then toolsAt f ms else none) none none [] 0
        ms).bind fun ts =>
          if lastOk ms && ts.all (turnOk f) then
            some (⟨ts, if g then some ms.length else none⟩ : MConv)
          else none) = some l := h
  obtain ⟨tools, -, h2⟩ := Option.bind_eq_some_iff.mp h'
  obtain ⟨ts, hts, h3⟩ := Option.bind_eq_some_iff.mp h2
  split at h3
  · rename_i hc
    cases h3
    simp only [Bool.and_eq_true, List.all_eq_true] at hc
    intro t ht
    exact ⟨lowerMsgs_good f _ _ _ _ _ _ _ _ hts (fun y hy => by cases hy) t ht, hc.2 t ht⟩
  · cases h3

/-! ## The v7 call list -/

theorem dropPre_append (p r : Chars) : dropPre p (p ++ r) = some r := by
  induction p with
  | nil => rfl
  | cons c p ih => simp [dropPre, ih]

theorem takeWhile_q {n : Chars} (hn : ∀ c ∈ n, c ≠ '"') {m : Chars} (hm : m.head? = some '"') :
    (n ++ m).takeWhile (· != '"') = n := by
  induction n with
  | nil =>
    cases m with
    | nil => cases hm
    | cons c m =>
      simp only [List.head?_cons, Option.some.injEq] at hm
      subst hm
      simp
  | cons c n ih =>
    have hc : c ≠ '"' := hn c List.mem_cons_self
    have ih' := ih (fun d hd => hn d (List.mem_cons_of_mem _ hd))
    have hb : (c != '"') = true := by simpa using hc
    rw [List.cons_append]
    first
      | simp only [List.takeWhile, hb, ih']
      | simp [List.takeWhile_cons, hb, ih']

theorem drop_len_append (n m : Chars) : (n ++ m).drop n.length = m := by
  induction n with
  | nil => rfl
  | cons c n ih => simpa using ih

theorem scanVal_ext : ∀ (a : Chars) (d : Nat) (s e : Bool) (r : Chars),
    scanVal d s e (a ++ [',']) = (a, [',']) → scanVal d s e (a ++ ',' :: r) = (a, ',' :: r) := by
  intro a
  induction a with
  | nil =>
    intro d s e r h
    cases s with
    | true => simp [scanVal] at h
    | false =>
      by_cases hd : d = 0
      · subst hd
        simp [scanVal]
      · simp [scanVal, hd] at h
  | cons c a ih =>
    intro d s e r h
    cases s with
    | true =>
      obtain ⟨s', e', hg⟩ : ∃ s' e', ∀ cs, (if e = true then scanVal d true false cs
          else if (c == '\\') = true then scanVal d true true cs
          else if (c == '"') = true then scanVal d false false cs
          else scanVal d true false cs) = scanVal d s' e' cs := by
        by_cases he : e = true
        · exact ⟨true, false, fun cs => by simp [he]⟩
        · by_cases hb : (c == '\\') = true
          · exact ⟨true, true, fun cs => by simp [he, hb]⟩
          · by_cases hq : (c == '"') = true
            · exact ⟨false, false, fun cs => by simp [he, hb, hq]⟩
            · exact ⟨true, false, fun cs => by simp [he, hb, hq]⟩
      have e1 : scanVal d true e (c :: (a ++ [','])) =
          (c :: (scanVal d s' e' (a ++ [','])).1, (scanVal d s' e' (a ++ [','])).2) := by
        rw [← hg]
        rfl
      have e2 : scanVal d true e (c :: (a ++ ',' :: r)) =
          (c :: (scanVal d s' e' (a ++ ',' :: r)).1, (scanVal d s' e' (a ++ ',' :: r)).2) := by
        rw [← hg]
        rfl
      rw [List.cons_append] at h ⊢
      rw [e1] at h
      rw [e2]
      simp only [Prod.mk.injEq, List.cons.injEq, true_and] at h
      rw [ih _ _ _ r (Prod.ext h.1 h.2)]
    | false =>
      have e1 : ∀ cs, scanVal d false e (c :: cs) =
          if (d == 0 && (c == ',' || c == '}' || c == ']')) = true then ([], c :: cs)
          else (c :: (scanVal (if (c == '{' || c == '[') = true then d + 1
            else if (c == '}' || c == ']') = true then d - 1 else d) (c == '"') false cs).1,
            (scanVal (if (c == '{' || c == '[') = true then d + 1
            else if (c == '}' || c == ']') = true then d - 1 else d) (c == '"') false cs).2) :=
        fun cs => rfl
      rw [List.cons_append] at h ⊢
      rw [e1] at h ⊢
      by_cases hs : (d == 0 && (c == ',' || c == '}' || c == ']')) = true
      · rw [if_pos hs] at h
        simp at h
      · rw [if_neg hs] at h ⊢
        simp only [Prod.mk.injEq, List.cons.injEq, true_and] at h
        rw [ih _ _ _ r (Prod.ext h.1 h.2)]

/-- Arguments that `scanOk` accepts scan to exactly themselves before a `,`. -/
theorem scanVal_ok {a : Chars} (ha : scanOk a = true) {m : Chars} (hm : m.head? = some ',') :
    scanVal 0 false false (a ++ m) = (a, m) := by
  cases m with
  | nil => cases hm
  | cons c m =>
    simp only [List.head?_cons, Option.some.injEq] at hm
    subst hm
    exact scanVal_ext a 0 false false m (by simpa [scanOk] using ha)

/-- A v7 call object as lowering writes it. -/
@[expose] def JGood (k : MCall) : Prop :=
  (∀ c ∈ k.1, c ≠ '"') ∧ k.1 ≠ [] ∧ scanOk k.2.1 = true ∧ k.2.1 ≠ [] ∧
    ∃ i, k.2.2 = some i ∧ (∀ c ∈ i, c ≠ '"') ∧ i ≠ []

theorem unCallJson_call {k : MCall} (hk : JGood k) (R : Chars) :
    unCallJson (callJson k ++ R) = some (k, R) := by
  obtain ⟨n, a, i'⟩ := k
  obtain ⟨hn, hn0, ha, ha0, i, rfl, hi, hi0⟩ := hk
  have e : callJson (n, a, some i) ++ R = (jName ++ ['"']) ++ (n ++ (('"' :: jArgs) ++
      (a ++ ((jId ++ ['"']) ++ (i ++ (['"', '}'] ++ R)))))) := by
    simp [callJson, quoted]
  rw [e]
  unfold unCallJson
  rw [dropPre_append]
  simp only [Option.bind_some]
  rw [takeWhile_q hn rfl, drop_len_append, dropPre_append]
  simp only [Option.bind_some]
  rw [scanVal_ok ha rfl]
  simp only [Option.bind_some]
  rw [dropPre_append]
  simp only [Option.bind_some]
  rw [takeWhile_q hi rfl, drop_len_append, dropPre_append]
  simp only [Option.bind_some]
  simp [hn0, ha0, hi0]

theorem joinObjs_cons_cons (x y : Chars) (ys : List Chars) :
    joinObjs (x :: y :: ys) = x ++ [',', ' '] ++ joinObjs (y :: ys) := rfl

theorem unCallsJson_read : ∀ (cs : List MCall) (n : Nat), cs ≠ [] → cs.length ≤ n →
    (∀ k ∈ cs, JGood k) → unCallsJson n (joinObjs (cs.map callJson) ++ [']']) = some cs
  | [], _, h, _, _ => absurd rfl h
  | [k], n, _, hn, hk => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    have := unCallJson_call (hk k List.mem_cons_self) [']']
    simp only [List.map_cons, List.map_nil, joinObjs]
    simp only [unCallsJson, this, Option.bind_some]
  | k :: k' :: ks, n, _, hn, hk => by
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by simp at hn; omega⟩
    have ih := unCallsJson_read (k' :: ks) m (List.cons_ne_nil _ _)
      (by simp at hn ⊢; omega) (fun k2 h2 => hk k2 (List.mem_cons_of_mem _ h2))
    have := unCallJson_call (hk k List.mem_cons_self)
      (',' :: ' ' :: (joinObjs ((k' :: ks).map callJson) ++ [']']))
    rw [List.map_cons, List.map_cons, joinObjs_cons_cons]
    have e : callJson k ++ [',', ' '] ++ joinObjs (callJson k' :: ks.map callJson) ++ [']'] =
        callJson k ++ (',' :: ' ' :: (joinObjs ((k' :: ks).map callJson) ++ [']'])) := by
      simp
    rw [e]
    simp only [unCallsJson, this, Option.bind_some, ih, Option.map_some]

theorem len_joinObjs : ∀ cs : List MCall, cs.length ≤ (joinObjs (cs.map callJson)).length
  | [] => by simp [joinObjs]
  | [k] => by simp [joinObjs, callJson, jName]
  | k :: k' :: ks => by
    have := len_joinObjs (k' :: ks)
    rw [List.map_cons, List.map_cons, joinObjs_cons_cons]
    rw [List.map_cons] at this
    simp only [List.length_append, List.length_cons] at this ⊢
    omega

end Verified.Mistral

end
