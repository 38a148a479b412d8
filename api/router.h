// Maps method + path to a handler. Patterns are literal segments and
// `{name}` parameters; a parameter may be followed by a literal suffix as in
// Google's custom methods: "/v1/pool/hosts/{host}:drain".
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/http.h"

namespace tpujobs::api {

using PathParams = std::map<std::string, std::string, std::less<>>;
using RouteHandler = std::function<void(Request&, const PathParams&, ResponseWriterPtr)>;

// Who may call a route, declared with it in the route table.
enum class Access {
  kOpen,    // anyone; no token is read (probes, /metrics, /openapi.json)
  kTenant,  // an authenticated caller (the default tenant when the service
            // runs without tokens), who sees only its own tenant's jobs
  kAdmin,   // a token with the admin role (pool and tenant administration)
};

// How many requests one request counts as against its tenant's
// requests_per_second (a list of many jobs counts as more than one read).
using RouteCost = std::function<double(const Request&)>;

struct Route {
  std::string method;
  std::string pattern;  // "/v1/jobs/{id}"
  Access access = Access::kTenant;
  RouteHandler handler;
  RouteCost cost = {};  // empty: 1
};

class Router {
 public:
  void add(std::string method, std::string pattern, Access access, RouteHandler handler,
           RouteCost cost = {});

  enum class Match { kFound, kNoPath, kNoMethod };
  struct Matched {
    Match match = Match::kNoPath;
    const Route* route = nullptr;  // kFound: the route, owned by the router
    PathParams params;             // kFound: the path's parameters
    std::string allowed;           // kNoMethod: the methods the path does accept ("GET, HEAD")
  };
  // The route of `method` on `path`. HEAD matches a path's GET route (RFC
  // 9110 §9.3.2: HEAD is answered as GET is; the server leaves the body
  // out), and `allowed` names HEAD wherever it names GET.
  Matched match(std::string_view method, std::string_view path) const;

  // The pattern a path matched (for metrics labels), or "" when none.
  std::string pattern_of(std::string_view method, std::string_view path) const;

  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

}  // namespace tpujobs::api
