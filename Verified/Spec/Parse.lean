module

public import Verified.Spec.Render

public section

/-!
# Parse

`parse f ts` maps a token list back to a pre-encoded conversation, or `none`. It is the
inverse of `renderTok` on valid conversations (`parse_render`) and never invents a
conversation (`render_parse`).

The parser is token-exact and format-directed: it strips exact delimiter prefixes, and reads
a payload as the maximal run of non-reserved tokens (`takeFree`). Recursion over messages and
blocks is structural on a fuel argument that starts at the input length (every message and
block consumes at least one token, so the fuel never runs out on a render).

Decoding payloads back to text is a separate step (`decodePayload`): a payload becomes
`text s` only when `s` re-encodes to exactly the same tokens, so decoding never loses
information.
-/

namespace Verified

/-- `stripPrefix? p ts` is `some rest` when `ts = p ++ rest`. -/
@[expose] def stripPrefix? : List Token → List Token → Option (List Token)
  | [], ts => some ts
  | _ :: _, [] => none
  | p :: ps, t :: ts => if p == t then stripPrefix? ps ts else none

/-- Split off the maximal prefix of non-reserved tokens. -/
@[expose] def takeFree (reserved : List Token) : List Token → List Token × List Token
  | [] => ([], [])
  | t :: ts =>
      if isReserved reserved t then ([], t :: ts)
      else
        let r := takeFree reserved ts
        (t :: r.1, r.2)

namespace Format

variable (f : EncFormat)

/-- Strip a non-empty delimiter; an empty delimiter never matches here. (The format argument
only enables `f.stripOpen` notation.) -/
@[expose] def stripOpen (_f : EncFormat) (d ts : List Token) : Option (List Token) :=
  if d.isEmpty then none else stripPrefix? d ts

/-- Find the role whose (non-empty) header starts `ts`. -/
@[expose] def matchHeader (ts : List Token) : Option (Role × List Token) :=
  Role.all.findSome? fun r => (f.stripOpen (f.header r) ts).map fun rest => (r, rest)

/-- Find the block kind whose (non-empty) opener starts `ts`. -/
@[expose] def matchOpen (ts : List Token) : Option (BlockKind × List Token) :=
  BlockKind.all.findSome? fun k => (f.stripOpen (f.blockOpen k) ts).map fun rest => (k, rest)

/-- Parse the body of a block of kind `k` (after its opener), up to and including its
closer. -/
@[expose] def parseBody (k : BlockKind) (ts : List Token) :
    Option (Block (List Token) × List Token) :=
  match k with
  | .plain =>
      let r := takeFree f.reserved ts
      (stripPrefix? (f.blockClose .plain) r.2).map fun rest => (.plain r.1, rest)
  | .reasoning =>
      let r := takeFree f.reserved ts
      (stripPrefix? (f.blockClose .reasoning) r.2).map fun rest => (.reasoning r.1, rest)
  | .toolCall =>
      if f.toolSep.isEmpty then
        let r := takeFree f.reserved ts
        (stripPrefix? (f.blockClose .toolCall) r.2).map fun rest => (.toolCall [] r.1, rest)
      else
        let n := takeFree f.reserved ts
        match stripPrefix? f.toolSep n.2 with
        | none => none
        | some ts' =>
            let a := takeFree f.reserved ts'
            (stripPrefix? (f.blockClose .toolCall) a.2).map fun rest => (.toolCall n.1 a.1, rest)

/-- Parse blocks until none starts; returns the blocks and the remaining tokens. -/
@[expose] def parseBlocks : Nat → List Token → Option (List (Block (List Token)) × List Token)
  | 0, _ => none
  | n + 1, ts =>
      match f.matchOpen ts with
      | some (k, ts₁) =>
          match f.parseBody k ts₁ with
          | none => none
          | some (b, ts₂) =>
              match parseBlocks n ts₂ with
              | none => none
              | some (bs, ts₃) => some (b :: bs, ts₃)
      | none =>
          match ts with
          | [] => some ([], [])
          | t :: rest =>
              if f.plainBare && !isReserved f.reserved t then
                match f.parseBody .plain (t :: rest) with
                | none => none
                | some (b, ts₂) =>
                    match parseBlocks n ts₂ with
                    | none => none
                    | some (bs, ts₃) => some (b :: bs, ts₃)
              else some ([], t :: rest)

/-- Parse one message: header, blocks, footer. -/
@[expose] def parseMsg (ts : List Token) : Option (Message (List Token) × List Token) :=
  match f.matchHeader ts with
  | none => none
  | some (r, ts₁) =>
      match f.parseBlocks (ts₁.length + 1) ts₁ with
      | none => none
      | some (bs, ts₂) => (stripPrefix? (f.footer r) ts₂).map fun rest => (⟨r, bs⟩, rest)

/-- Parse messages until the input ends or only the generation prompt is left. -/
@[expose] def parseMsgs : Nat → List Token → Option (List (Message (List Token)) × Bool)
  | 0, _ => none
  | n + 1, ts =>
      if ts.isEmpty then some ([], false)
      else if ts == f.header .assistant then some ([], true)
      else
        match f.parseMsg ts with
        | none => none
        | some (m, rest) =>
            match parseMsgs n rest with
            | none => none
            | some (ms, g) => some (m :: ms, g)

/-- Parse a token list into a pre-encoded conversation. -/
@[expose] def parse (ts : List Token) : Option (Conversation (List Token)) :=
  match stripPrefix? f.bos ts with
  | none => none
  | some ts₁ => (f.parseMsgs (ts₁.length + 1) ts₁).map fun r => ⟨r.1, r.2⟩

end Format

/-- Decode a payload: `text s` when the bytes are valid UTF-8 and `s` re-encodes to exactly
the same tokens, otherwise the tokens themselves. -/
@[expose] def decodePayload (codec : Codec) (ts : List Token) : Payload :=
  match String.fromUTF8? (ByteArray.mk (codec.decodeBytes ts).toArray) with
  | some s => if codec.encode s == ts then .text s else .tokens ts
  | none => .tokens ts

/-- Decode every payload of a parsed conversation. -/
@[expose] def Conversation.decode (codec : Codec) (c : Conversation (List Token)) :
    Conversation Payload :=
  c.map (decodePayload codec)

end Verified

end
