module

public import Verified.Spec.Token
public import Verified.Spec.Json
public import Verified.Spec.Message
public import Verified.Spec.Sym
public import Verified.Spec.Span
public import Verified.Spec.Format
public import Verified.Spec.QwenText
public import Verified.Spec.QwenXml
public import Verified.Spec.QwenXmlFormat
public import Verified.Spec.Qwen
public import Verified.Spec.QwenQwQ
public import Verified.Spec.QwenEntries
public import Verified.Spec.Llama
public import Verified.Spec.LlamaPlain
public import Verified.Spec.DeepSeek
public import Verified.Spec.DeepSeekV31
public import Verified.Spec.DeepSeekNorm
public import Verified.Spec.LlamaNorm
public import Verified.Spec.QwenNorm
public import Verified.Spec.Gemma
public import Verified.Spec.MistralLayout
public import Verified.Spec.MistralLower
public import Verified.Spec.Mistral
public import Verified.Spec.MistralV3
public import Verified.Spec.MistralTemplate
public import Verified.Spec.HarmonyTools
public import Verified.Spec.Harmony
public import Verified.Spec.CharCodec
public import Verified.Spec.Tagged
public import Verified.Spec.TaggedEntries
public import Verified.Spec.TaggedDefault
public import Verified.Thm.Token
public import Verified.Thm.Sym
public import Verified.Thm.Span
public import Verified.Thm.Items
public import Verified.Thm.Format
public import Verified.Thm.Qwen
public import Verified.Thm.QwenQwQ
public import Verified.Thm.QwenEntries
public import Verified.Thm.QwenXml
public import Verified.Thm.QwenXmlRead
public import Verified.Thm.QwenXmlLawful
public import Verified.Thm.QwenXmlPrompt
public import Verified.Thm.QwenXmlMask
public import Verified.Thm.QwenXmlExtend
public import Verified.Thm.Llama
public import Verified.Thm.LlamaPlain
public import Verified.Thm.LlamaPlainPrefix
public import Verified.Thm.LlamaPlainInjective
public import Verified.Thm.DeepSeek
public import Verified.Thm.DeepSeekRead
public import Verified.Thm.DeepSeekRound
public import Verified.Thm.DeepSeekLearn
public import Verified.Thm.Gemma
public import Verified.Thm.Mistral
public import Verified.Thm.MistralPrefix
public import Verified.Thm.Harmony
public import Verified.Thm.HarmonyCtrl
public import Verified.Thm.HarmonyPrefix
public import Verified.Thm.GemmaMask
public import Verified.Thm.GemmaPrompt
public import Verified.Thm.GemmaInjective
public import Verified.Thm.Ffi
public import Verified.Thm.FfiJson
public import Verified.Thm.SymSplit
public import Verified.Thm.DeepSeekPrefixCall
public import Verified.Thm.DeepSeekV31Layout
public import Verified.Thm.DeepSeekV31
public import Verified.Thm.DeepSeekV31Prefix
public import Verified.Thm.DeepSeekV31Mask
public import Verified.Thm.DeepSeekV31Injective
public import Verified.Thm.DeepSeekInjective
public import Verified.Thm.LlamaInjective
public import Verified.Thm.QwenInjective
public import Verified.Thm.QwenQwQInjective
public import Verified.Thm.HarmonyRead
public import Verified.Thm.HarmonyRound
public import Verified.Thm.HarmonyMask
public import Verified.Thm.HarmonyLearn
public import Verified.Thm.HarmonyPromptIds
public import Verified.Thm.MistralMask
public import Verified.Thm.MistralRead
public import Verified.Thm.MistralLower
public import Verified.Thm.MistralRound
public import Verified.Thm.MistralTemplate
public import Verified.Thm.MistralTemplateInjective
public import Verified.Thm.Golden
public import Verified.Thm.MistralV3
public import Verified.Thm.MistralV3Sound
public import Verified.Thm.MistralV3Round
public import Verified.Thm.MistralV3Mask
public import Verified.Thm.TaggedRead
public import Verified.Thm.TaggedLawful
public import Verified.Thm.TaggedMask
public import Verified.Thm.TaggedPrefix
public import Verified.Thm.TaggedInjective
public import Verified.Thm.TaggedEntries
public import Verified.Thm.TaggedDefault

/-!
# Lean Verified Tokenizers

Umbrella module: imports the specification (`Verified/Spec`: UTF-8, JSON, messages, symbol
streams, span encoding, formats, the Qwen, Llama, Gemma, DeepSeek-R1, Mistral and gpt-oss
(Harmony) families, the tagged-turns structure (Phi, Kimi), the character codec of the golden renders) and the proofs (`Verified/Thm`,
the golden renders of every entry against its template included).
-/
