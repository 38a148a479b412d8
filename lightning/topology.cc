// resources.topology: a slice named by its shape ("4x4", "2x2x4"), as
// Cloud TPU's AcceleratorConfig and GKE's tpu-topology name it. These are
// tpujobs' own messages: Lightning never sees a topology.
#include <algorithm>
#include <charconv>

#include "lightning/checks.h"

namespace tpujobs::lightning {

std::optional<std::string> canonical_topology(std::string_view text) {
  std::vector<int> dims;
  while (true) {
    const std::size_t x = text.find('x');
    const std::string_view part = text.substr(0, x);
    int value = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size() || value <= 0) return std::nullopt;
    dims.push_back(value);
    if (x == std::string_view::npos) break;
    text.remove_prefix(x + 1);
  }
  if (dims.size() < 2 || dims.size() > 3) return std::nullopt;
  std::sort(dims.begin(), dims.end());
  std::string out = std::to_string(dims[0]);
  for (std::size_t i = 1; i < dims.size(); ++i) out += "x" + std::to_string(dims[i]);
  return out;
}

namespace {

// "v5e: 2x4, 4x4, 4x8, ...; v5p: 2x2x1, ..." for the generations in the pool.
std::string pool_topologies(const Context& c) {
  std::vector<std::string> parts;
  for (Generation g : c.pool_generations) {
    std::vector<std::string> shapes;
    for (const auto& [shape, size] : g->topologies) shapes.push_back(shape);
    if (!shapes.empty()) parts.push_back(generation_name(g) + ": " + join(shapes, ", "));
  }
  return parts.empty() ? "none (the pool's generations have no topology names)" : join(parts, "; ");
}

bool agrees_with_named_type(Context& c, const std::string& written, const std::string& shape) {
  const std::optional<SliceType> named = parse_slice_type(c.pool, *c.settings.accelerator_type);
  if (!named) return true;  // the accelerator_type check reports it
  const std::string named_shape = named->topology();
  if (canonical_topology(named_shape) == shape) return true;
  std::string same_generation;
  for (const auto& [t, size] : named->generation->topologies) {
    if (canonical_topology(t) == shape) same_generation = SliceType{named->generation, size}.name();
  }
  c.error(
      kFieldTopology,
      "`topology=" + py_repr(written) +
          "` does not match `accelerator_type=" + py_repr(named->name()) + "`, " +
          (named_shape.empty() ? "which has no topology name." : "which is a " + named_shape + "."),
      "Give one of the two, or make them agree" +
          (same_generation.empty() ? std::string(".")
                                   : ": " + written + " is " + same_generation + ".") +
          " Topologies here: " + pool_topologies(c) + ".");
  return false;
}

}  // namespace

bool check_topology(Context& c, std::optional<std::string>* accelerator_type) {
  const std::string& written = *c.settings.topology;
  if (c.accelerator == Accelerator::kCpu) {
    c.error(kFieldTopology,
            "`topology=" + py_repr(written) +
                "` names a TPU slice shape, but the job runs with `accelerator='cpu'`.",
            "Drop `resources.topology` for a CPU job, or set `accelerator: \"tpu\"`.");
    return false;
  }
  const std::optional<std::string> shape = canonical_topology(written);
  if (!shape) {
    c.error(kFieldTopology,
            py_repr(written) +
                " is not a topology: expected 2 or 3 positive dimensions joined by 'x', such as "
                "'4x4' or '2x2x4'.",
            "Topologies here: " + pool_topologies(c) + ".");
    return false;
  }
  if (c.settings.accelerator_type) return agrees_with_named_type(c, written, *shape);
  std::vector<SliceType> matches, in_pool;
  for (const TpuGeneration& g : c.pool.generations) {
    for (const auto& [t, size] : g.topologies) {
      if (canonical_topology(t) != shape) continue;
      matches.push_back(SliceType{&g, size});
      if (c.pool_hosts(&g) > 0) in_pool.push_back(SliceType{&g, size});
    }
  }
  if (matches.empty()) {
    c.error(kFieldTopology,
            py_repr(written) +
                " is not the shape of a whole-host slice of any TPU generation "
                "this service emulates.",
            "Topologies here: " + pool_topologies(c) + ".");
    return false;
  }
  if (in_pool.empty() && matches.size() > 1) {
    std::vector<std::string> names;
    for (const SliceType& s : matches) names.push_back(s.name());
    c.error(kFieldTopology,
            py_repr(written) + " is " + join(names, " or ") +
                ", and the pool has hosts of neither generation.",
            "Topologies here: " + pool_topologies(c) + ".");
    return false;
  }
  if (in_pool.size() > 1) {
    std::vector<std::string> names;
    for (const SliceType& s : in_pool) names.push_back(s.name());
    c.error(kFieldTopology,
            py_repr(written) +
                " is a slice of more than one generation in the pool: " + join(names, ", ") + ".",
            "Name the one to use with `resources.accelerator_type` (e.g. \"" + names.front() +
                "\"), with or without the topology.");
    return false;
  }
  // A shape only a generation absent from the pool has: the accelerator
  // type check then reports the pool's generations.
  *accelerator_type = (in_pool.empty() ? matches.front() : in_pool.front()).name();
  return true;
}

}  // namespace tpujobs::lightning
