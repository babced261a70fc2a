// Hardware CRC32C (Castagnoli) for LedgerStorage: the SSE4.2 crc32 instruction on x86-64 and the
// ARMv8 CRC32C instructions on arm64, chosen at run time. LedgerStorage keeps a portable Swift
// implementation and uses this one only when `ccrc32c_hardware_available()` says the CPU has it.
#ifndef CCRC32C_H
#define CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has a CRC32C instruction, else 0.
int ccrc32c_hardware_available(void);

/// Continues a CRC32C over `length` bytes. `crc` is the raw register (the caller inverts before
/// and after, as in the table-driven version). Only call when `ccrc32c_hardware_available()`.
uint32_t ccrc32c_update_hardware(uint32_t crc, const void *data, size_t length);

#endif
