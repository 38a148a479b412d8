#include "executor/denormals.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace tpujobs::executor {
namespace {

#if defined(__SSE2__)
constexpr unsigned kFlushToZero = 0x8000;       // MXCSR bit 15 (_MM_FLUSH_ZERO_ON)
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR bit 6 (_MM_DENORMALS_ZERO_ON)
constexpr unsigned kFlushBits = kFlushToZero | kDenormalsAreZero;

unsigned read_mode() { return _mm_getcsr(); }
void write_mode(unsigned mode) { _mm_setcsr(mode); }
#else
constexpr unsigned kFlushBits = 0;
unsigned read_mode() { return 0; }
void write_mode(unsigned) {}
#endif

}  // namespace

void flush_denormals_on_this_thread() { write_mode(read_mode() | kFlushBits); }

bool denormals_flushed_on_this_thread() {
  return kFlushBits != 0 && (read_mode() & kFlushBits) == kFlushBits;
}

FlushDenormalsScope::FlushDenormalsScope() : saved_mode_(read_mode()) {
  flush_denormals_on_this_thread();
}

FlushDenormalsScope::~FlushDenormalsScope() { write_mode(saved_mode_); }

}  // namespace tpujobs::executor
