module

/-!
# Lean Verified Tokenizers

Umbrella module: imports the specification (`Verified/Spec`) and the proofs (`Verified/Thm`).
-/

public import Verified.Spec.Token
public import Verified.Spec.Message
public import Verified.Spec.Format
public import Verified.Spec.Render
public import Verified.Spec.Parse
public import Verified.Spec.Formats
