# Stand-in for nvidia-imex-ctl in bash: nvidia-imex-ctl -c CONFIG -q
#
# The same tool as ctl.py (which see), for machines that have bash: it runs once per readiness
# probe of every simulated daemon, and a bash start is a fraction of a Python one (the real tool
# is a small C program). The wrapper directory (wrappers.py) writes this file with a #! line
# naming the bash it found; where there is none, the wrapper runs ctl.py instead. Exit codes and
# output are ctl.py's (tests/unit/sim/imex/test_ctl_bash.py runs both on the same cases):
# READY and 0 when the daemon's command port answers READY, a reason and 1 otherwise, 2 for
# bad usage. It reads the config itself (KEY=VALUE lines, # comments, surrounding blanks
# stripped, the last of a repeated key wins) and talks to the daemon through bash's /dev/tcp,
# which has no connect timeout of its own (the probe's timeout bounds it; the daemon's command
# port is on a local address, where a connection is accepted or refused at once).
usage="usage: nvidia-imex-ctl -c CONFIG -q"
config= query= config_set=
while [ $# -gt 0 ]; do
  case $1 in
    -q | --query) query=1 ;;
    -c | --config)
      if [ $# -lt 2 ]; then
        printf "nvidia-imex-ctl: %s needs a value\n%s\n" "$1" "$usage" >&2
        exit 2
      fi
      config=$2 config_set=1
      shift ;;
    --config=*) config=${1#--config=} config_set=1 ;;
    -c?*) config=${1#-c} config_set=1 ;;
    *)
      printf "nvidia-imex-ctl: unknown argument '%s'\n%s\n" "$1" "$usage" >&2
      exit 2 ;;
  esac
  shift
done
if [ -z "$config_set" ]; then
  printf "nvidia-imex-ctl: -c CONFIG is required\n%s\n" "$usage" >&2
  exit 2
fi
if [ -z "$query" ]; then
  echo "only -q is supported by the simulation's nvidia-imex-ctl" >&2
  exit 2
fi
if ! { exec 4<"$config"; } 2>/dev/null; then
  echo "cannot read $config: cannot open it"
  exit 1
fi
enabled=0 host= port=
trim() {  # sets $trimmed to $1 without leading and trailing blanks
  trimmed=${1#"${1%%[![:space:]]*}"}
  trimmed=${trimmed%"${trimmed##*[![:space:]]}"}
}
while IFS= read -r line <&4 || [ -n "$line" ]; do
  trim "$line"
  case $trimmed in "" | "#"*) continue ;; *=*) ;; *) continue ;; esac
  trim "${trimmed%%=*}"; key=$trimmed
  trim "${line#*=}"; value=$trimmed
  case $key in
    IMEX_CMD_ENABLED) enabled=$value ;;
    IMEX_CMD_BIND_INTERFACE_IP) host=$value ;;
    IMEX_CMD_PORT) port=$value ;;
  esac
done
exec 4<&-
if [ "$enabled" != 1 ]; then
  echo "IMEX command service is disabled (IMEX_CMD_ENABLED != 1)"
  exit 1
fi
host=${host:-127.0.0.1}
case $port in
  "") port=50005 ;;
  *[!0-9]*)
    echo "IMEX_CMD_PORT='$port' in $config is not a port"
    exit 1 ;;
esac
port=$((10#$port))
if [ "$port" -gt 65535 ] || ! { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null; then
  echo "IMEX daemon at $host:$port is not ready: cannot connect"
  exit 1
fi
printf 'QUERY\n' >&3
IFS= read -r -d '' -t 5 answer <&3  # everything until the daemon closes (or 5 s)
exec 3<&-
printf '%s' "$answer"
[ "$answer" = $'READY\n' ]
