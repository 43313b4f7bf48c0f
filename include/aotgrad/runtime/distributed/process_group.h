// aotgrad: the named process groups the functional collectives run on (c10d), and the world group
// made from torchrun's or OpenMPI's environment.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace c10d {
class ProcessGroup;
}

namespace aotgrad {

/// The world group's name, as PyTorch 2.x's printed graphs give it (`group_name='0'`).
inline constexpr const char* kWorldGroupName = "0";

/// Where this process is in a job, as its launcher says.
struct DistEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;  // the rendezvous (TCPStore) host and port
  int master_port = 0;
  std::string source;  // "torchrun" (RANK, WORLD_SIZE, ...) or "OpenMPI" (OMPI_COMM_WORLD_*)
};

/// This process's place in a job from torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
/// MASTER_ADDR, MASTER_PORT) or, without RANK, OpenMPI's (OMPI_COMM_WORLD_RANK, _SIZE,
/// _LOCAL_RANK; MASTER_ADDR and MASTER_PORT default to 127.0.0.1 and 29500); nullopt when neither
/// is set. Throws Error naming the variable for a malformed or inconsistent value (a rank outside
/// [0, WORLD_SIZE), a missing MASTER_ADDR with WORLD_SIZE > 1, ...).
std::optional<DistEnvironment> distributed_environment();

/// The time a rendezvous or a collective may take before it fails: AOTGRAD_DIST_TIMEOUT seconds
/// (a positive number), else 300 s. Throws Error for a malformed value.
std::chrono::milliseconds distributed_timeout();

/// Creates the world group '0' on Gloo from `env`: a TCPStore served by rank 0 at
/// master_addr:master_port (an in-process store for a world of one), then ProcessGroupGloo over
/// it, each step bounded by `timeout`. Gloo's device binds GLOO_SOCKET_IFNAME if set, the
/// loopback address for a loopback master, else the host's address. Throws Error naming the rank,
/// the world size and the master, and saying what to check, when the master is unreachable or not
/// every rank joins in time. A second call, or one after the user registered '0', throws.
void init_world_process_group(const DistEnvironment& env, std::chrono::milliseconds timeout);

/// Registers a group the user made (any c10d::ProcessGroup: Gloo, NCCL, MPI) under `name`, for
/// collectives whose group_name is `name`. Throws Error if the name is taken or `group` is null.
void register_process_group(const std::string& name,
                            const c10::intrusive_ptr<c10d::ProcessGroup>& group);

/// The group named `name`. The world group '0', when nobody registered it, is made on first use
/// from the environment (distributed_environment(), distributed_timeout()). Throws Error naming
/// the group and the registered ones for an unknown name, or saying that no launcher's variables
/// are set.
c10::intrusive_ptr<c10d::ProcessGroup> resolve_process_group(const std::string& name);

/// Before a graph whose collectives name `name` runs: resolves it, since libtorch's own
/// _c10d_functional kernels find groups in c10d's registry only (the world group is made there
/// from the environment). Throws as resolve_process_group does.
void prepare_process_group(const std::string& name);
/// After a collective of `group` failed: which of its ranks have exited, as "rank 1 (pid 4242)"
/// joined by ", ", or "" when none is known to have. The world group made from the environment
/// records every rank's host and process id when it is made; a rank on this host whose process is
/// gone (or a zombie) has exited. Peers on other hosts, and groups the user registered, are not
/// known. Waits up to `patience` for a dying peer to be gone.
std::string exited_ranks(const std::string& group,
                         std::chrono::milliseconds patience = std::chrono::milliseconds(2000));

/// The names of the registered groups, sorted.
std::vector<std::string> process_group_names();

/// Drops every registered group (tests; a group still in use by a pending collective lives on).
void clear_process_groups();

}  // namespace aotgrad
