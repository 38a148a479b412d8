// The Lightning releases whose rules tpujobs reproduces, one per minor
// version, each quoting the source of its last patch release (the tag). A
// rule table row names the versions it holds for as a Versions range; where
// an earlier patch release differs, the row names its patches too.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tpujobs::lightning {

struct Release {
  int major;
  int minor;
  std::string_view tag;  // the git tag of Lightning-AI/pytorch-lightning the rules quote

  int number() const { return major * 100 + minor; }  // 2.1 -> 201
  std::string name() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// 1.6 ... 2.5, oldest first.
std::span<const Release> releases();

// "1.6" ... "2.5"; "1.x" / "2.x" (the last release of each); or a full
// version as `pip freeze` shows it ("2.1.3", "1.9.0rc1"), which selects its
// minor version. nullptr for anything else.
const Release* find_release(std::string_view text);

// "1.6, 1.7, ..., 2.5, 1.x, 2.x" for messages.
std::string release_names();

// An inclusive range of releases, by number(): {106, 209} is 1.6 ... 2.9.
struct Versions {
  int first;
  int last;
  bool contains(int number) const { return first <= number && number <= last; }
};

// The first row of `table` whose `versions` holds `number`; nullptr if none.
template <typename Row>
const Row* row_for(std::span<const Row> table, int number) {
  for (const Row& row : table) {
    if (row.versions.contains(number)) return &row;
  }
  return nullptr;
}

// A few rules changed in a patch release (2.5.3 rewrote the FSDP text, 2.5.6
// dropped the HPU line). Their tables name patch releases too, by
// patch_number(): 2.5.2 -> 20502.
inline constexpr Versions kEveryPatch = {0, 999999};
inline int patch_number(int number, int patch) { return number * 100 + patch; }

// The patch of a version as `pip freeze` shows it ("2.5.1" -> 1, "2.5.0rc1"
// -> 0); the patch of the release's tag when `text` names none ("2.5", "2.x").
int release_patch(std::string_view text, const Release& release);

// The first row of `table` whose `versions` holds `number` and whose
// `patches` holds `patch`, a patch_number(); nullptr if none.
template <typename Row>
const Row* row_for(std::span<const Row> table, int number, int patch) {
  for (const Row& row : table) {
    if (row.versions.contains(number) && row.patches.contains(patch)) return &row;
  }
  return nullptr;
}

}  // namespace tpujobs::lightning
