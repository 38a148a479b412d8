// Subnormal floats are flushed to zero on every thread that trains, as on a
// TPU: the MXU and the vector units compute with bfloat16/fp32 and treat
// subnormal inputs and results as zero. On x86 this is the MXCSR's
// flush-to-zero (FTZ: a subnormal result becomes zero) and
// denormals-are-zero (DAZ: a subnormal input reads as zero) bits. It is also
// what keeps a late step as fast as an early one on Intel cores, where every
// operation on a subnormal takes a microcode assist (about a hundred cycles).
//
// The mode is a property of the thread, so it applies to every kernel (SSE2,
// AVX2, AVX-512: VEX and EVEX instructions follow the MXCSR too) and a run
// stays bit-identical for a seed on one machine. On other architectures these
// calls do nothing.
#pragma once

namespace tpujobs::executor {

// Sets FTZ and DAZ on the calling thread for good (the worker pool's threads).
void flush_denormals_on_this_thread();

// True when both FTZ and DAZ are set on the calling thread.
bool denormals_flushed_on_this_thread();

// Sets FTZ and DAZ on the calling thread for the scope's lifetime and then
// restores the thread's previous mode (train() runs on the caller's thread).
class FlushDenormalsScope {
 public:
  FlushDenormalsScope();
  ~FlushDenormalsScope();
  FlushDenormalsScope(const FlushDenormalsScope&) = delete;
  FlushDenormalsScope& operator=(const FlushDenormalsScope&) = delete;

 private:
  unsigned saved_mode_ = 0;
};

}  // namespace tpujobs::executor
