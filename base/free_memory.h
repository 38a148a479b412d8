// Gives the pages of freed memory back to the system, whichever allocator
// the process runs on: the service binary links jemalloc (service/
// CMakeLists.txt), the tests and the sanitizer builds glibc's malloc. A
// process calls it after freeing much at once (the scheduler leader after a
// complete read of the queue), so that its resident size follows what it
// keeps rather than what it once read.
#pragma once

namespace tpujobs::base {

// jemalloc: purges every arena's unused dirty pages. glibc: malloc_trim(0).
void return_free_memory();

// jemalloc: starts its background threads, which give unused dirty pages
// back as they age, off the threads that allocate (which otherwise purge
// as they go). Returns whether they run: false under other allocators.
// Threads started later inherit the caller's signal mask.
bool purge_in_background();

// "jemalloc", or "system" (the C library's malloc, or a sanitizer's): the
// allocator this process runs on.
const char* allocator_name();

}  // namespace tpujobs::base
