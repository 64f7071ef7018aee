module

public import Verified.Thm.HarmonyRead
public import Verified.Thm.Format

public section

/-!
# The gpt-oss (Harmony) round trip, and `Format.Lawful`

* `lowerMsgs_notDev`: lowering writes a developer turn only as the first turn (`devTurn`);
  the messages after it become user, analysis, final, call, result and sampled turns.
* `devTurn_textual`: a developer turn with a text layout has its text folded into the payload
  (`pre = post = []`), the form `unlayout` reads back.
* `unlayout_layout`: `unlayout` inverts `layout` (up to owners) on every lowered conversation
  whose layout is text-only. No condition beyond the lowering is needed: an empty body reads
  back as `[<|message|>, END]`, a call header `assistant to=functions.NAME` is never `assistant`
  (even for an empty name), and a result header starts with `functions.`, not `assistant`.
* `lawful`: every Harmony format is lawful for ids whose six control tokens are distinct.
* `gpt_oss_lawful`, `gpt_oss_parse_render`, `gpt_oss_render_parse`,
  `gpt_oss_render_injective_lowered`, `gpt_oss_no_forgery`: the shipped o200k_harmony ids, in
  both modes and for every date, effort and identity.
-/

namespace Verified.Harmony

open Verified

variable (f : HarmonyFmt)

/-! ## What lowering writes -/

/-- A developer turn. -/
@[expose] def HTurn.isDev : HTurn → Bool
  | .dev .. => true
  | _ => false

theorem analysis_notDev (n : Nat) (c : Prop) [Decidable c] (L : List LPay) :
    ∀ x ∈ (if c then L.map (fun p => HTurn.analysis p n) else []), x.isDev = false := by
  intro x hx
  split at hx
  · obtain ⟨p, -, rfl⟩ := List.mem_map.mp hx
    rfl
  · cases hx

/-- An assistant message is written without a developer turn. -/
theorem lowerAsst_notDev {n : Nat} {m : Message} {later : List Message} {last : Bool}
    {r : List HTurn × Option Chars} (h : lowerAsst f n m later last = some r) :
    ∀ t ∈ r.1, t.isDev = false := by
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
      simp only [hb, Option.bind_some] at h
      split at h
      · simp only [Option.some.injEq] at h
        subst h
        intro t ht
        rcases List.mem_append.mp ht with ht | ht
        · exact analysis_notDev _ _ _ t ht
        · simp only [List.mem_singleton] at ht
          subst ht
          rfl
      · split at h
        · cases h
        · simp only [Option.some.injEq] at h
          subst h
          intro t ht
          rcases List.mem_append.mp ht with ht | ht
          · exact analysis_notDev _ _ _ t ht
          · simp only [List.mem_singleton] at ht
            subst ht
            rfl
      · cases h

/-- The messages after the first are written without a developer turn. -/
theorem lowerMsgs_notDev (g : Bool) : ∀ (ms : List Message) (last : Option Chars) (i : Nat)
    (ts : List HTurn), lowerMsgs f g last i ms = some ts → ∀ t ∈ ts, t.isDev = false
  | [], _, _, ts, h => by
    simp only [lowerMsgs, Option.some.injEq] at h
    subst h
    intro t ht
    cases ht
  | m :: ms, last, i, ts, h => by
    simp only [lowerMsgs] at h
    split at h
    · obtain ⟨r, hr, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
      intro t ht
      rcases List.mem_append.mp ht with ht | ht
      · exact lowerAsst_notDev f hr t ht
      · exact lowerMsgs_notDev g ms _ _ _ hts' t ht
    · split at h
      · obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
        intro t ht
        rcases List.mem_cons.mp ht with rfl | ht
        · rfl
        · exact lowerMsgs_notDev g ms _ _ _ hts' t ht
      · cases h
    · obtain ⟨p, -, h⟩ := Option.bind_eq_some_iff.mp h
      obtain ⟨ts', hts', rfl⟩ := Option.map_eq_some_iff.mp h
      intro t ht
      rcases List.mem_cons.mp ht with rfl | ht
      · rfl
      · exact lowerMsgs_notDev g ms _ _ _ hts' t ht
    · cases h

/-! ## Text-only turns are textual -/

/-- A turn other than the developer turn whose items are text-only is textual. -/
theorem textual_of_textOnly (t : HTurn) (hd : t.isDev = false)
    (h : textOnly (turnItems f t) = true) : t.textual = true := by
  cases t with
  | dev => simp [HTurn.isDev] at hd
  | user p o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, head, body, ctl, txt, pay, Piece.isToks] at h
  | analysis p o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, head, body, chan, ctl, txt, pay, Piece.isToks] at h
  | final p r o =>
    cases p with
    | text _ => rfl
    | toks _ => simp [textOnly, turnItems, head, body, chan, ctl, txt, pay, Piece.isToks] at h
  | call => rfl
  | result => rfl
  | sampled ts o => simp [textOnly, turnItems, promptItems, head, ctl, txt, Piece.isToks] at h

/-- A developer turn whose items are text-only has its text folded into the payload. -/
theorem devTurn_textual {instr : Option LPay} {tools : Option Chars} {t : HTurn}
    (h : devTurn instr tools = some t) (ht : textOnly (turnItems f t) = true) :
    t.textual = true := by
  unfold devTurn at h
  dsimp only at h
  split at h
  · cases h
  · split at h
    · cases h
      simp [textOnly, turnItems, head, ctl, txt, pay, Piece.isToks] at ht
    · cases h
      rfl
    · cases h
      rfl

theorem textOnly_turn {x : Chars} {ts : List HTurn} {p : Option Nat}
    (h : textOnly (layout f ⟨x, ts, p⟩) = true) {t : HTurn} (ht : t ∈ ts) :
    textOnly (turnItems f t) = true := by
  rw [layout_eq] at h
  unfold textOnly at h ⊢
  exact List.all_eq_true.mpr fun it hit => List.all_eq_true.mp h it
    (List.mem_append_left _ (List.mem_append_right _ (List.mem_flatMap.mpr ⟨t, ht, hit⟩)))

/-! ## The round trip -/

/-- `unlayout` inverts `layout` (up to owners) on every lowered conversation whose layout is
text-only. -/
theorem unlayout_layout (hf : f.ids.wf = true) {c : Conversation} {l : HConv}
    (hl : lower f c = some l) (htx : textOnly (layout f l) = true) :
    unlayout f (syms (layout f l)) = some l.erase := by
  have hw := wfFacts hf
  simp only [lower, Option.bind_eq_some_iff] at hl
  obtain ⟨tt, -, ⟨instr, rest, i0⟩, -, ts, hts, hl⟩ := hl
  split at hl
  · simp only [Option.some.injEq] at hl
    subst hl
    have hall : ∀ t ∈ (devTurn instr tt).toList ++ ts, t.textual = true := by
      intro t ht
      have htt := textOnly_turn f htx ht
      rcases List.mem_append.mp ht with ht | ht
      · cases hd : devTurn instr tt with
        | none => simp [hd] at ht
        | some d =>
          simp only [hd, Option.toList_some, List.mem_singleton] at ht
          subst ht
          exact devTurn_textual f hd htt
      · exact textual_of_textOnly f t (lowerMsgs_notDev f _ _ _ _ _ hts t ht) htt
    rw [unlayout_read f hw _ _ _ hall]
    rfl
  · cases hl

/-- Every Harmony format is lawful for ids whose six control tokens are distinct. -/
theorem lawful (hf : f.ids.wf = true) : (format f).Lawful :=
  ⟨fun _ _ hl ht => unlayout_layout f hf hl ht, fun s l h => layout_unlayout f s l h,
    fun l t ht => ctrl_reserved f l t ht, fun l => syms_erase f l⟩

/-! ## The shipped ids -/

/-- The gpt-oss format with the o200k_harmony ids, a mode and the system message options. -/
@[expose] def gptOssFmt (m : Mode) (date : Chars) (effort : Effort) (identity : Chars) :
    HarmonyFmt :=
  ⟨gptOssIds, m, date, effort, identity⟩

variable (m : Mode) (date : Chars) (effort : Effort) (identity : Chars)

/-- `gpt-oss` and `gpt-oss-stable` are lawful, for every date, effort and identity. -/
theorem gpt_oss_lawful : (format (gptOssFmt m date effort identity)).Lawful :=
  lawful _ gptOssIds_wf

/-- Parsing the render of a conversation gives back its lowered form (owners erased), for both
gpt-oss formats and every lawful codec. -/
theorem gpt_oss_parse_render {codec : Codec} (hc : codec.Lawful gptOssIds.reserved)
    {c : Conversation} {l : HConv} (hl : lower (gptOssFmt m date effort identity) c = some l)
    (ht : textOnly (layout (gptOssFmt m date effort identity) l) = true) :
    (format (gptOssFmt m date effort identity)).parse codec
      (ids (encodeItems codec (layout (gptOssFmt m date effort identity) l))) = some l.erase :=
  Format.parse_render (gpt_oss_lawful m date effort identity) hc hl ht

/-- The gpt-oss parser never invents a conversation: what it accepts re-renders to exactly the
input tokens. -/
theorem gpt_oss_render_parse {codec : Codec} {ts : List Token} {l : HConv}
    (h : (format (gptOssFmt m date effort identity)).parse codec ts = some l) :
    ids (encodeItems codec (layout (gptOssFmt m date effort identity) l)) = ts :=
  Format.render_parse (gpt_oss_lawful m date effort identity) h

/-- Two conversations with the same gpt-oss render have the same lowered form up to owners. -/
theorem gpt_oss_render_injective_lowered {codec : Codec} (hc : codec.Lawful gptOssIds.reserved)
    {c d : Conversation} {l l' : HConv} (hl : lower (gptOssFmt m date effort identity) c = some l)
    (hl' : lower (gptOssFmt m date effort identity) d = some l')
    (ht : textOnly (layout (gptOssFmt m date effort identity) l) = true)
    (ht' : textOnly (layout (gptOssFmt m date effort identity) l') = true)
    (h : ids (encodeItems codec (layout (gptOssFmt m date effort identity) l)) =
      ids (encodeItems codec (layout (gptOssFmt m date effort identity) l'))) :
    l.erase = l'.erase :=
  Format.render_injective_lowered (gpt_oss_lawful m date effort identity) hc hl hl' ht ht' h

/-- No forgery: the reserved tokens of a gpt-oss render are exactly the control tokens its
layout placed, in order. -/
theorem gpt_oss_no_forgery {codec : Codec} (hc : codec.Lawful gptOssIds.reserved) (l : HConv)
    (ht : textOnly (layout (gptOssFmt m date effort identity) l) = true) :
    (ids (encodeItems codec (layout (gptOssFmt m date effort identity) l))).filter
        (isReserved gptOssIds.reserved) =
      ctrls (syms (layout (gptOssFmt m date effort identity) l)) :=
  Format.no_forgery (gpt_oss_lawful m date effort identity) hc l ht

end Verified.Harmony

end
