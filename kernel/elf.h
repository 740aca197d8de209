// ELF64 structures, just what exec() reads.
#pragma once
#include <stdint.h>

constexpr uint32_t ELF_MAGIC = 0x464c457f;   // "\x7fELF" little-endian
constexpr uint16_t ELF_MACHINE_RISCV = 243;
constexpr uint16_t ELF_TYPE_EXEC = 2;

struct ElfHeader {
  uint32_t magic;
  uint8_t elf[12];     // class, data, version, abi, padding
  uint16_t type;
  uint16_t machine;
  uint32_t version;
  uint64_t entry;
  uint64_t phoff;
  uint64_t shoff;
  uint32_t flags;
  uint16_t ehsize;
  uint16_t phentsize;
  uint16_t phnum;
  uint16_t shentsize;
  uint16_t shnum;
  uint16_t shstrndx;
};

constexpr uint32_t PT_LOAD = 1;
constexpr uint32_t PF_X = 1, PF_W = 2, PF_R = 4;

struct ProgramHeader {
  uint32_t type;
  uint32_t flags;
  uint64_t off;
  uint64_t vaddr;
  uint64_t paddr;
  uint64_t filesz;
  uint64_t memsz;
  uint64_t align;
};
