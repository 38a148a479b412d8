// GET /v1/tenants/{tenant}/limits (the tenant itself or an admin) and
// POST /v1/tenants/{tenant}/limits (an admin): api/tenant_limits.h.
#include "api/jobs_api.h"
#include "api/problem.h"

namespace tpujobs::api {

void JobsApi::add_limit_routes() {
  auto no_limits = [](const ResponseWriterPtr& w) {
    w->respond(problem(503, "this service keeps no tenant limits"));
  };
  router_.add("GET", "/v1/tenants/{tenant}/limits", Access::kTenant,
              [this, no_limits](Request& r, const PathParams& p, ResponseWriterPtr w) {
                if (!options_.limits) return no_limits(w);
                const std::string tenant = p.find("tenant")->second.substr(0, 64);
                if (!r.admin && tenant != r.tenant) {
                  w->respond(problem(403, "only an admin reads another tenant's limits"));
                  return;
                }
                base::Result<std::string> text = options_.limits->describe(tenant);
                Response response;
                response.body = std::move(*text);
                w->respond(std::move(response));
              });
  router_.add("POST", "/v1/tenants/{tenant}/limits", Access::kAdmin,
              [this, no_limits](Request& r, const PathParams& p, ResponseWriterPtr w) {
                if (!options_.limits) return no_limits(w);
                const std::string tenant = p.find("tenant")->second.substr(0, 64);
                if (auto refused = options_.limits->set(tenant, r.body)) {
                  w->respond(std::move(*refused));
                  return;
                }
                Response response;
                response.body = *options_.limits->describe(tenant);
                w->respond(std::move(response));
              });
}

}  // namespace tpujobs::api
