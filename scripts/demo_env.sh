# Source this (`. scripts/demo_env.sh`) in another shell to talk to `bash scripts/demo.sh`: the same ROS 2
# domain and loopback-only Cyclone DDS configuration, and the demo's virtual environment on PATH.
#   ROS_DOMAIN_ID   default 42 (keep the demo off domain 0, where other ROS 2 systems usually are)
#   CYCLONEDDS_URI  default: the loopback interface only, multicast off, unicast peer 127.0.0.1
_mm_top=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-42}
export CYCLONEDDS_URI=${CYCLONEDDS_URI:-'<CycloneDDS><Domain id="any"><General><Interfaces><NetworkInterface name="lo"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>32</MaxAutoParticipantIndex><Peers><Peer address="127.0.0.1"/></Peers></Discovery></Domain></CycloneDDS>'}
if [ -d "${VENV:-$_mm_top/.venv}/bin" ]; then
  case ":$PATH:" in *":${VENV:-$_mm_top/.venv}/bin:"*) ;; *) export PATH="${VENV:-$_mm_top/.venv}/bin:$PATH" ;; esac
fi
unset _mm_top
