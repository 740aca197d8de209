// ai_submit's side of constrained decoding (kai_ai_submit.grammar): copy the
// text in, compile it for the model's vocabulary, or say why not.
//
// Compiles take turns (a sleep lock): the compiler's working memory
// (kGrammarScratchBytes + kGrammarTableBytes, limits.h) then exists at most
// once, and a long compile sleeps nobody but other compiling submitters.
// The model's tokenizer (TOK.BIN) is read on the first constrained request
// for that model and kept: masks need every token's bytes.
#include "grammar_submit.h"
#include "models.h"
#include "requests.h"
#include "../fs/fs.h"
#include "../kalloc.h"
#include "../sleeplock.h"
#include "../string.h"
#include "../printf.h"
#include "../user_ptr.h"

namespace ai {

namespace {

Sleeplock compile_lock("ai-grammar");

// Per model (index as in models[]): its tokenizer once read. Under compile_lock.
struct ModelVocab {
  bool loaded;
  uint8_t* bytes;   // TOK.BIN, kept for the model's life (the view points into it)
  uint64_t size;
  llm::Tokenizer tokenizer;
  llm::VocabView view;
};
ModelVocab vocabs[KAI_AI_MAX_MODELS];

ErrorOr<const llm::VocabView*, Error> vocab_of(int m, const char* name, uint32_t vocab_size) {
  ModelVocab& v = vocabs[m];
  if (v.loaded) return &v.view;
  char path[64];
  ksnprintf(path, sizeof path, "/AI/%s/TOK.BIN", name);
  fs::Inode* ip;
  {
    fs::Transaction tx;
    auto found = fs::namei(path);
    if (found.is_error()) return Error::make(Errno::Invalid, "grammar", "the model has no TOK.BIN (no token bytes to mask)");
    ip = found.value();
  }
  fs::ilock(ip);
  uint64_t size = fs::inode_size(ip);
  auto* bytes = static_cast<uint8_t*>(kalloc_contiguous(size));
  ErrorOr<uint64_t> got = Errno::NoMem;
  if (bytes) got = fs::readi(ip, false, reinterpret_cast<uint64_t>(bytes), 0, size);
  fs::iunlock(ip);
  {
    fs::Transaction tx;
    fs::iput(ip);
  }
  if (bytes == nullptr) return Error::make(Errno::NoMem, "grammar", "no kernel memory for TOK.BIN");
  if (got.is_error() || got.value() != size) {
    kfree_contiguous(bytes, size);
    return Error::make(Errno::IO, "grammar", "TOK.BIN: read error");
  }
  auto tok = llm::load_tokenizer(bytes, size);
  if (tok.is_error()) {
    kfree_contiguous(bytes, size);
    return Error::from("grammar", tok.error());
  }
  v.bytes = bytes;
  v.size = size;
  v.tokenizer = tok.value();
  v.view = llm::vocab_from_tokenizer(v.tokenizer, vocab_size);
  v.loaded = true;
  return &v.view;
}

// Writes e's message to the caller's error_text (if it gave one).
void tell(const kai_ai_grammar& g, const Error& e) {
  if (g.error_text == nullptr || g.error_text_len == 0) return;
  char text[sizeof e.message];
  uint32_t n = 0;
  while (n + 1 < sizeof text && n + 1 < g.error_text_len && e.message[n]) {
    text[n] = e.message[n];
    n++;
  }
  text[n] = 0;
  (void)copy_to_user(UserPtr<char>(reinterpret_cast<uint64_t>(g.error_text)), text, n + 1);
}

// Bytes of kernel memory for the compiler, given back on every return.
class CompilerMemory {
 public:
  CompilerMemory() : scratch_(kalloc_contiguous(kGrammarScratchBytes)), table_(kalloc_contiguous(kGrammarTableBytes)) {}
  ~CompilerMemory() {
    if (scratch_) kfree_contiguous(scratch_, kGrammarScratchBytes);
    if (table_) kfree_contiguous(table_, kGrammarTableBytes);
  }
  CompilerMemory(const CompilerMemory&) = delete;
  CompilerMemory& operator=(const CompilerMemory&) = delete;
  bool ok() const { return scratch_ && table_; }
  void* scratch() { return scratch_; }
  void* table() { return table_; }

 private:
  void* scratch_;
  void* table_;
};

// Copies the grammar's text into a kernel buffer of kMaxGrammarBytes.
class GrammarText {
 public:
  GrammarText() : bytes_(static_cast<char*>(kalloc_contiguous(kMaxGrammarBytes))) {}
  ~GrammarText() {
    if (bytes_) kfree_contiguous(bytes_, kMaxGrammarBytes);
  }
  GrammarText(const GrammarText&) = delete;
  GrammarText& operator=(const GrammarText&) = delete;
  char* get() { return bytes_; }

 private:
  char* bytes_;
};

}  // namespace

bool grammar_shape_ok(const kai_ai_grammar& g) {
  if (g.reserved != 0) return false;
  if (g.kind == KAI_AI_GRAMMAR_NONE) return g.len == 0 && g.text == nullptr;
  if (g.kind != KAI_AI_GRAMMAR_REGEX && g.kind != KAI_AI_GRAMMAR_JSON) return false;
  return g.len >= 1 && g.len <= kMaxGrammarBytes;
}

ErrorOr<RequestGrammar*, Error> compile_submitted_grammar(const kai_ai_grammar& g, int model) {
  if (g.kind == KAI_AI_GRAMMAR_NONE) return static_cast<RequestGrammar*>(nullptr);
  GrammarText text;
  if (text.get() == nullptr) return Error::make(Errno::NoMem, "grammar", "no kernel memory for its text");
  if (copy_from_user(text.get(), UserPtr<char>(reinterpret_cast<uint64_t>(g.text)), g.len).is_error())
    return Error::make(Errno::Fault, "grammar", "bad text pointer");
  char name[KAI_AI_MODEL_NAME_MAX];
  uint32_t vocab_size;
  {
    SpinlockGuard guard(lock);
    safestrcpy(name, models[model].name, sizeof name);
    vocab_size = models[model].summary.vocab_size;
  }
  SleeplockGuard turn(compile_lock);
  auto vocab = vocab_of(model, name, vocab_size);
  if (vocab.is_error()) {
    tell(g, vocab.error());
    return vocab.error();
  }
  CompilerMemory memory;
  if (!memory.ok()) return Error::make(Errno::NoMem, "grammar", "no kernel memory for the compiler");
  auto built = grammar_build(static_cast<llm::GrammarKind>(g.kind), text.get(), g.len, *vocab.value(),
                             memory.scratch(), memory.table());
  if (built.is_error()) tell(g, built.error());
  return built;
}

}  // namespace ai
