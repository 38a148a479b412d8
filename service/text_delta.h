// A text kept as the differences from a similar text (its base): runs
// copied from the base and literal bytes between them. The views of the
// jobs of one sweep differ in a few numbers (id, seed, created_at, queue
// position), so each is kept in tens of bytes instead of two kilobytes.
//
// Pure; a DeltaBase is immutable once built and may be shared between
// threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tpujobs::service {

// A base text with an index of its 8-byte runs (at every kStep-th byte),
// for encoding. What a delta decodes against is the text alone: keep
// text() (shared) and let the index go.
class DeltaBase {
 public:
  explicit DeltaBase(std::shared_ptr<const std::string> text);

  const std::shared_ptr<const std::string>& text() const { return text_; }
  // Where the 8 bytes at `at` of some text also start in the base (the
  // first indexed occurrence), or -1.
  std::int64_t find_gram(std::string_view text, std::size_t at) const;

  static constexpr std::size_t kGram = 8;
  static constexpr std::size_t kStep = 4;

 private:
  std::shared_ptr<const std::string> text_;
  std::unordered_map<std::uint64_t, std::uint32_t> grams_;
};

// `text` as operations on `base`: each a literal (its length, then its
// bytes) followed by a copy (its length, then where it starts in the
// base), lengths and positions as base-128 varints. Never fails: a text
// unlike its base is one literal.
std::string delta_encode(const DeltaBase& base, std::string_view text);
// Appends to `out` the text that `delta` (from delta_encode over a base
// whose text is `base`) describes.
void delta_decode(std::string_view base, std::string_view delta, std::string& out);

}  // namespace tpujobs::service
