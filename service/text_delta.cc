#include "service/text_delta.h"

#include <algorithm>
#include <cstring>

namespace tpujobs::service {
namespace {

// Shorter copies cost about as much as the literal they replace.
constexpr std::size_t kMinCopy = 6;

std::uint64_t load_gram(const char* at) {
  std::uint64_t gram = 0;
  std::memcpy(&gram, at, DeltaBase::kGram);
  return gram;
}

void put_varint(std::string& out, std::size_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

std::size_t get_varint(std::string_view in, std::size_t& at) {
  std::size_t value = 0;
  for (int shift = 0; at < in.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in[at++]);
    value |= static_cast<std::size_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return value;
}

}  // namespace

DeltaBase::DeltaBase(std::shared_ptr<const std::string> text) : text_(std::move(text)) {
  const std::string& t = *text_;
  if (t.size() < kGram) return;
  grams_.reserve(t.size() / kStep + 1);
  for (std::size_t at = 0; at + kGram <= t.size(); at += kStep)
    grams_.try_emplace(load_gram(t.data() + at), static_cast<std::uint32_t>(at));
}

std::int64_t DeltaBase::find_gram(std::string_view text, std::size_t at) const {
  if (at + kGram > text.size()) return -1;
  auto it = grams_.find(load_gram(text.data() + at));
  return it == grams_.end() ? -1 : static_cast<std::int64_t>(it->second);
}

std::string delta_encode(const DeltaBase& base, std::string_view text) {
  const std::string_view b = *base.text();
  std::string out;
  std::size_t i = 0;
  std::size_t literal_start = 0;
  std::size_t expect = 0;  // where the base continues the last copy
  auto match = [&](std::size_t from) {
    std::size_t n = 0;
    while (from + n < b.size() && i + n < text.size() && b[from + n] == text[i + n]) ++n;
    return n;
  };
  auto emit = [&](std::size_t copy, std::size_t from) {
    put_varint(out, i - literal_start);
    out.append(text.substr(literal_start, i - literal_start));
    put_varint(out, copy);
    put_varint(out, from);
  };
  while (i < text.size()) {
    std::size_t best = 0;
    std::size_t from = 0;
    // The base right after the last copy, or past as many bytes as the
    // literal since (a number of the same width that differs).
    for (std::size_t candidate : {expect, expect + (i - literal_start)}) {
      if (candidate >= b.size()) continue;
      if (std::size_t n = match(candidate); n > best) best = n, from = candidate;
    }
    if (best < kMinCopy) {
      if (std::int64_t at = base.find_gram(text, i); at >= 0) {
        if (std::size_t n = match(static_cast<std::size_t>(at)); n > best)
          best = n, from = static_cast<std::size_t>(at);
      }
    }
    if (best < kMinCopy) {
      ++i;
      continue;
    }
    emit(best, from);
    i += best;
    expect = from + best;
    literal_start = i;
  }
  if (literal_start < text.size() || out.empty()) emit(0, 0);
  return out;
}

void delta_decode(std::string_view base, std::string_view delta, std::string& out) {
  std::size_t at = 0;
  while (at < delta.size()) {
    const std::size_t literal = std::min(get_varint(delta, at), delta.size() - at);
    out.append(delta.substr(at, literal));
    at += literal;
    const std::size_t copy = get_varint(delta, at);
    const std::size_t from = std::min(get_varint(delta, at), base.size());
    out.append(base.substr(from, copy));
  }
}

}  // namespace tpujobs::service
