#include "ccrc32c.h"
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>

int ccrc32c_hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t ccrc32c_update_hardware(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t wide = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        wide = _mm_crc32_u64(wide, word);
        p += 8;
        length -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (length > 0) {
        narrow = _mm_crc32_u8(narrow, *p++);
        length--;
    }
    return narrow;
}

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>

int ccrc32c_hardware_available(void) { return 1; }

uint32_t ccrc32c_update_hardware(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        length -= 8;
    }
    while (length > 0) {
        crc = __crc32cb(crc, *p++);
        length--;
    }
    return crc;
}

#else

int ccrc32c_hardware_available(void) { return 0; }

uint32_t ccrc32c_update_hardware(uint32_t crc, const void *data, size_t length) {
    (void)data;
    (void)length;
    return crc;
}

#endif
