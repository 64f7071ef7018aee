module

public import Verified.Spec.Format

public section

/-!
# Facts about well-formed formats

`Format.wf` is one big Boolean conjunction. This file unpacks it into named, directly usable
facts (every delimiter that matters is led by a reserved token, distinct headers and openers
are prefix-incomparable, openers cannot be confused with footers or headers, the assistant
has a header and a non-empty end of turn), together with the list lemmas about prefixes
(`isPrefixB`, `incomparable`) that the round-trip proof uses.
-/

namespace Verified

/-- A list is a prefix of itself followed by anything. -/
theorem isPrefixB_append (a r : List Token) : isPrefixB a (a ++ r) = true := by
  induction a with
  | nil => simp [isPrefixB]
  | cons x a ih => simp [isPrefixB, ih]

/-- If `a ++ x = b ++ y`, one of `a`, `b` is a prefix of the other. -/
theorem isPrefixB_of_append_eq {a b x y : List Token} (h : a ++ x = b ++ y) :
    isPrefixB a b = true ∨ isPrefixB b a = true := by
  rcases List.append_eq_append_iff.mp h with ⟨a', hb, _⟩ | ⟨c', ha, _⟩
  · left
    rw [hb]
    exact isPrefixB_append a a'
  · right
    rw [ha]
    exact isPrefixB_append b c'

/-- Incomparable lists cannot both start the same token list: this is what makes the
delimiters of a well-formed format unambiguous. -/
theorem append_ne_of_incomparable {a b x y : List Token} (h : incomparable a b = true) :
    a ++ x ≠ b ++ y := by
  intro he
  rcases isPrefixB_of_append_eq he with h1 | h1 <;> simp [incomparable, h1] at h

/-- `isPrefixB a b` holds exactly when `b` extends `a`. -/
theorem isPrefixB_iff_exists {a b : List Token} :
    isPrefixB a b = true ↔ ∃ r, b = a ++ r := by
  induction a generalizing b with
  | nil => simp [isPrefixB]
  | cons x a ih =>
    cases b with
    | nil => simp [isPrefixB]
    | cons y b =>
      simp only [isPrefixB, Bool.and_eq_true, beq_iff_eq, ih, List.cons_append,
        List.cons.injEq]
      constructor
      · rintro ⟨rfl, r, rfl⟩
        exact ⟨r, rfl, rfl⟩
      · rintro ⟨r, rfl, rfl⟩
        exact ⟨rfl, r, rfl⟩

namespace Format

variable {f : EncFormat}

/-- A guarded non-empty delimiter puts a reserved token first, whatever follows it. -/
theorem leadsReserved_append_of_guarded {d : List Token} (hg : f.guarded d = true)
    (hd : d ≠ []) (x : List Token) : leadsReserved f.reserved (d ++ x) = true := by
  cases d with
  | nil => exact absurd rfl hd
  | cons t d => simpa [guarded, leadsReserved] using hg

/-- A role is supported exactly when its header is non-empty. -/
theorem supports_iff (r : Role) : f.supports r = true ↔ f.header r ≠ [] := by
  simp [supports]

theorem mem_Role_all (r : Role) : r ∈ Role.all := by
  cases r <;> decide

theorem mem_BlockKind_all (k : BlockKind) : k ∈ BlockKind.all := by
  cases k <;> decide

/-- In a well-formed format every header is empty or led by a reserved token. -/
theorem wf_header_guarded (h : f.wf = true) (r : Role) : f.guarded (f.header r) = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  exact (h.1.1.1.1.1.1.1 r (mem_Role_all r)).1

/-- In a well-formed format every footer is empty or led by a reserved token. -/
theorem wf_footer_guarded (h : f.wf = true) (r : Role) : f.guarded (f.footer r) = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  exact (h.1.1.1.1.1.1.1 r (mem_Role_all r)).2

/-- In a well-formed format the assistant header (the generation prompt) is non-empty. -/
theorem wf_header_assistant_ne (h : f.wf = true) : f.header .assistant ≠ [] := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  exact (supports_iff _).mp h.1.1.1.1.1.1.2

/-- In a well-formed format the assistant footer (end of turn) is non-empty. -/
theorem wf_footer_assistant_ne (h : f.wf = true) : f.footer .assistant ≠ [] := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  have h3 := h.1.1.1.1.1.2
  simpa using h3

/-- In a well-formed format headers of distinct supported roles are incomparable. -/
theorem wf_header_incomparable (h : f.wf = true) {r r' : Role} (hne : r ≠ r')
    (hr : f.header r ≠ []) (hr' : f.header r' ≠ []) :
    incomparable (f.header r) (f.header r') = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  have h4 := h.1.1.1.1.2 r (mem_Role_all r) r' (mem_Role_all r')
  simpa [hne, hr, hr'] using h4

/-- In a well-formed format every block opener is empty or led by a reserved token. -/
theorem wf_open_guarded (h : f.wf = true) (k : BlockKind) :
    f.guarded (f.blockOpen k) = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  exact (h.1.1.1.2 k (mem_BlockKind_all k)).1

/-- In a well-formed format every block closer is empty or led by a reserved token. -/
theorem wf_close_guarded (h : f.wf = true) (k : BlockKind) :
    f.guarded (f.blockClose k) = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  exact (h.1.1.1.2 k (mem_BlockKind_all k)).2

/-- In a well-formed format the tool separator is empty or led by a reserved token. -/
theorem wf_toolSep_guarded (h : f.wf = true) : f.guarded f.toolSep = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  exact h.1.1.2

/-- In a well-formed format non-empty openers of distinct kinds are incomparable. -/
theorem wf_open_incomparable (h : f.wf = true) {k k' : BlockKind} (hne : k ≠ k')
    (hk : f.blockOpen k ≠ []) (hk' : f.blockOpen k' ≠ []) :
    incomparable (f.blockOpen k) (f.blockOpen k') = true := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  have h7 := h.1.2 k (mem_BlockKind_all k) k' (mem_BlockKind_all k')
  simpa [hne, hk, hk'] using h7

/-- In a well-formed format a non-empty opener is incomparable with every non-empty footer
and with every non-empty header. -/
theorem wf_open_apart (h : f.wf = true) {k : BlockKind} (hk : f.blockOpen k ≠ [])
    (r : Role) :
    (f.footer r ≠ [] → incomparable (f.blockOpen k) (f.footer r) = true) ∧
    (f.header r ≠ [] → incomparable (f.blockOpen k) (f.header r) = true) := by
  simp only [wf, Bool.and_eq_true, List.all_eq_true] at h
  have h8 := h.2 k (mem_BlockKind_all k)
  simp only [apartFromTurns, Bool.or_eq_true, List.all_eq_true, Bool.and_eq_true,
    List.isEmpty_iff] at h8
  rcases h8 with h8 | h8
  · exact absurd h8 hk
  · have h9 := h8 r (mem_Role_all r)
    constructor
    · intro hr
      rcases h9.1 with h10 | h10
      · exact absurd h10 hr
      · exact h10
    · intro hr
      rcases h9.2 with h10 | h10
      · exact absurd h10 hr
      · exact h10

/-- A usable kind other than plain has a non-empty opener. -/
theorem open_ne_of_hasKind {k : BlockKind} (hk : f.hasKind k = true) (hp : k ≠ .plain) :
    f.blockOpen k ≠ [] := by
  simpa [hasKind, hp] using hk

end Format

end Verified

end
