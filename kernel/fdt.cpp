// The FDT is a header plus a token stream (BEGIN_NODE name, PROP len nameoff
// value, END_NODE) with all integers big-endian. We walk it once.
#include "fdt.h"
#include "string.h"

namespace {

constexpr uint32_t FDT_MAGIC = 0xd00dfeed;
constexpr uint32_t TOK_BEGIN = 1, TOK_END = 2, TOK_PROP = 3, TOK_NOP = 4, TOK_FINISH = 9;

uint32_t be32(const void* p) {
  auto* b = static_cast<const uint8_t*>(p);
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
}
uint64_t be_cells(const uint8_t* p, uint32_t cells) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < cells; i++) v = (v << 32) | be32(p + 4 * i);
  return v;
}
bool starts_with(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

}  // namespace

void fdt_parse(uint64_t fdt_addr, BootInfo& info) {
  auto* base = reinterpret_cast<const uint8_t*>(fdt_addr);
  if (fdt_addr == 0 || be32(base) != FDT_MAGIC) return;
  const uint8_t* structs = base + be32(base + 8);
  const char* strings = reinterpret_cast<const char*>(base + be32(base + 12));

  // Node path tracked by depth: which kind of node are we in?
  enum class Kind { Other, Root, Memory, Cpus, Cpu, Chosen };
  Kind kinds[16] = {};
  uint32_t addr_cells = 2, size_cells = 2;   // of the root (memory reg)
  uint32_t cpu_addr_cells = 1;
  int depth = -1;
  bool cpu_is_okay = true;
  uint64_t cpu_reg = ~0ull;

  const uint8_t* p = structs;
  for (;;) {
    uint32_t tok = be32(p);
    p += 4;
    if (tok == TOK_BEGIN) {
      const char* name = reinterpret_cast<const char*>(p);
      p += (strlen(name) + 1 + 3) & ~3ul;
      depth++;
      if (depth >= 16) return;
      Kind parent = depth > 0 ? kinds[depth - 1] : Kind::Other;
      Kind k = Kind::Other;
      if (depth == 0) k = Kind::Root;
      else if (parent == Kind::Root && starts_with(name, "memory")) k = Kind::Memory;
      else if (parent == Kind::Root && strcmp(name, "cpus") == 0) k = Kind::Cpus;
      else if (parent == Kind::Root && strcmp(name, "chosen") == 0) k = Kind::Chosen;
      else if (parent == Kind::Cpus && starts_with(name, "cpu@")) k = Kind::Cpu;
      kinds[depth] = k;
      if (k == Kind::Cpu) { cpu_is_okay = true; cpu_reg = ~0ull; }
    } else if (tok == TOK_END) {
      if (depth >= 0 && kinds[depth] == Kind::Cpu && cpu_is_okay && cpu_reg != ~0ull &&
          info.nharts < NCPU)
        info.hart_ids[info.nharts++] = cpu_reg;
      depth--;
    } else if (tok == TOK_PROP) {
      uint32_t len = be32(p);
      const char* pname = strings + be32(p + 4);
      const uint8_t* val = p + 8;
      p += 8 + ((len + 3) & ~3u);
      Kind k = depth >= 0 ? kinds[depth] : Kind::Other;
      if (k == Kind::Root && strcmp(pname, "#address-cells") == 0) addr_cells = be32(val);
      else if (k == Kind::Root && strcmp(pname, "#size-cells") == 0) size_cells = be32(val);
      else if (k == Kind::Memory && strcmp(pname, "reg") == 0 && len >= 4 * (addr_cells + size_cells)) {
        info.ram_base = be_cells(val, addr_cells);
        info.ram_size = be_cells(val + 4 * addr_cells, size_cells);
      } else if (k == Kind::Cpus && strcmp(pname, "#address-cells") == 0) {
        cpu_addr_cells = be32(val);
      } else if (k == Kind::Cpus && strcmp(pname, "timebase-frequency") == 0) {
        info.timebase_hz = len >= 8 ? be_cells(val, 2) : be32(val);
      } else if (k == Kind::Cpu && strcmp(pname, "reg") == 0) {
        cpu_reg = be_cells(val, cpu_addr_cells);
      } else if (k == Kind::Chosen && strcmp(pname, "bootargs") == 0) {
        safestrcpy(info.bootargs, reinterpret_cast<const char*>(val),
                   len < sizeof(info.bootargs) ? len + 1 : sizeof(info.bootargs));
      } else if (k == Kind::Cpu && strcmp(pname, "status") == 0) {
        cpu_is_okay = strcmp(reinterpret_cast<const char*>(val), "okay") == 0;
      }
    } else if (tok == TOK_NOP) {
      continue;
    } else {
      (void)TOK_FINISH;
      return;
    }
  }
}

bool bootarg_str(const BootInfo& info, const char* key, char* out, size_t size) {
  size_t key_len = strlen(key);
  for (const char* p = info.bootargs; *p;) {
    while (*p == ' ') p++;
    if (strncmp(p, key, key_len) == 0 && p[key_len] == '=') {
      const char* v = p + key_len + 1;
      size_t n = 0;
      while (v[n] && v[n] != ' ') n++;
      if (n + 1 > size) return false;
      memcpy(out, v, n);
      out[n] = 0;
      return true;
    }
    while (*p && *p != ' ') p++;
  }
  return false;
}

int64_t bootarg_int(const BootInfo& info, const char* key, int64_t fallback) {
  size_t key_len = strlen(key);
  for (const char* p = info.bootargs; *p;) {
    while (*p == ' ') p++;
    if (strncmp(p, key, key_len) == 0 && p[key_len] == '=') {
      const char* v = p + key_len + 1;
      if (*v < '0' || *v > '9') return fallback;
      int64_t n = 0;
      while (*v >= '0' && *v <= '9') n = n * 10 + (*v++ - '0');
      return (*v == 0 || *v == ' ') ? n : fallback;
    }
    while (*p && *p != ' ') p++;
  }
  return fallback;
}
