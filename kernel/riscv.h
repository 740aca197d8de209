// RISC-V privileged-architecture helpers: CSR access, sstatus/sie bits,
// Sv39 page-table entry layout. Everything here is a thin inline wrapper.
#pragma once
#include <stdint.h>

#define KAI_CSR_READ(name)                                   \
  ({                                                         \
    uint64_t _v;                                             \
    asm volatile("csrr %0, " #name : "=r"(_v));              \
    _v;                                                      \
  })
#define KAI_CSR_WRITE(name, v) asm volatile("csrw " #name ", %0" ::"r"((uint64_t)(v)))
#define KAI_CSR_SET(name, v) asm volatile("csrs " #name ", %0" ::"r"((uint64_t)(v)))
#define KAI_CSR_CLEAR(name, v) asm volatile("csrc " #name ", %0" ::"r"((uint64_t)(v)))

namespace riscv {

// sstatus bits
constexpr uint64_t SSTATUS_SIE = 1ull << 1;    // supervisor interrupts enabled
constexpr uint64_t SSTATUS_SPIE = 1ull << 5;   // SIE before the trap
constexpr uint64_t SSTATUS_SPP = 1ull << 8;    // trapped from S-mode (1) or U-mode (0)
constexpr uint64_t SSTATUS_FS_MASK = 3ull << 13;
constexpr uint64_t SSTATUS_FS_INITIAL = 1ull << 13;
constexpr uint64_t SSTATUS_FS_DIRTY = 3ull << 13;
constexpr uint64_t SSTATUS_SUM = 1ull << 18;   // S-mode may touch U pages

// sie bits
constexpr uint64_t SIE_SSIE = 1ull << 1;
constexpr uint64_t SIE_STIE = 1ull << 5;
constexpr uint64_t SIE_SEIE = 1ull << 9;

// scause values
constexpr uint64_t SCAUSE_INTERRUPT = 1ull << 63;
constexpr uint64_t IRQ_S_SOFT = 1;
constexpr uint64_t IRQ_S_TIMER = 5;
constexpr uint64_t IRQ_S_EXTERNAL = 9;
constexpr uint64_t EXC_ECALL_U = 8;
constexpr uint64_t EXC_INST_PAGE_FAULT = 12, EXC_LOAD_PAGE_FAULT = 13, EXC_STORE_PAGE_FAULT = 15;

inline uint64_t read_sstatus() { return KAI_CSR_READ(sstatus); }
inline void write_sstatus(uint64_t v) { KAI_CSR_WRITE(sstatus, v); }
inline uint64_t read_scause() { return KAI_CSR_READ(scause); }
inline uint64_t read_sepc() { return KAI_CSR_READ(sepc); }
inline void write_sepc(uint64_t v) { KAI_CSR_WRITE(sepc, v); }
inline uint64_t read_stval() { return KAI_CSR_READ(stval); }
inline uint64_t read_satp() { return KAI_CSR_READ(satp); }
inline uint64_t read_time() { return KAI_CSR_READ(time); }
inline uint64_t read_tp() {
  uint64_t v;
  asm volatile("mv %0, tp" : "=r"(v));
  return v;
}

inline void intr_on() { KAI_CSR_SET(sstatus, SSTATUS_SIE); }
inline void intr_off() { KAI_CSR_CLEAR(sstatus, SSTATUS_SIE); }
inline bool intr_get() { return (read_sstatus() & SSTATUS_SIE) != 0; }

inline void sfence_vma() { asm volatile("sfence.vma zero, zero" ::: "memory"); }

// Sv39
constexpr uint64_t PAGE_SHIFT = 12;
constexpr uint64_t PTE_V = 1 << 0, PTE_R = 1 << 1, PTE_W = 1 << 2, PTE_X = 1 << 3,
                   PTE_U = 1 << 4, PTE_G = 1 << 5, PTE_A = 1 << 6, PTE_D = 1 << 7;
// One of the two bits the hardware leaves to software (RSW): a writable page
// that fork made read-only to share it; the first store copies it (uvm_copy).
constexpr uint64_t PTE_COW = 1 << 8;
constexpr uint64_t SATP_SV39 = 8ull << 60;
inline uint64_t make_satp(uint64_t root_pa) { return SATP_SV39 | (root_pa >> 12); }
inline uint64_t pa_to_pte(uint64_t pa) { return (pa >> 12) << 10; }
inline uint64_t pte_to_pa(uint64_t pte) { return (pte >> 10) << 12; }
inline uint64_t pte_flags(uint64_t pte) { return pte & 0x3ff; }
inline uint64_t vpn_index(uint64_t va, int level) { return (va >> (12 + 9 * level)) & 0x1ff; }
// One bit below the Sv39 maximum, so that no address needs sign extension.
constexpr uint64_t MAXVA = 1ull << 38;

}  // namespace riscv

constexpr uint64_t page_round_up(uint64_t a) { return (a + 4095) & ~4095ull; }
constexpr uint64_t page_round_down(uint64_t a) { return a & ~4095ull; }
