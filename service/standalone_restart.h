// A standalone serve is the only member of its cluster (DESIGN §9): the
// jobs a previous process of it left placed (killed, or the machine went
// down) ran on its own agent, which is gone with it. Before its agent
// registers again, they are requeued to resume from their last checkpoint,
// as after a graceful stop, rather than failed as on a lost agent of a
// cluster; the ones whose cancel was asked end CANCELLED.
#pragma once

#include "base/result.h"
#include "db/connection_pool.h"

namespace tpujobs::service {

base::Status requeue_left_placed(db::ConnectionPool& pool);

}  // namespace tpujobs::service
