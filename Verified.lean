module

public import Verified.Spec.Token
public import Verified.Spec.Message
public import Verified.Spec.Format
public import Verified.Spec.Render
public import Verified.Spec.Parse
public import Verified.Spec.Formats
public import Verified.Thm.Token
public import Verified.Thm.Message
public import Verified.Thm.Render
public import Verified.Thm.Format
public import Verified.Thm.Parse
public import Verified.Thm.ParseSound
public import Verified.Thm.Injective
public import Verified.Thm.Formats
public import Verified.Thm.Ffi

/-!
# Lean Verified Tokenizers

Umbrella module: imports the specification (`Verified/Spec`), the proofs (`Verified/Thm`) and
the FFI exports (`Verified/Ffi`, through its proofs). `Verified/Main.lean` (the oracle
executable) is deliberately not imported: its `main` must stay out of the shared library.
-/
