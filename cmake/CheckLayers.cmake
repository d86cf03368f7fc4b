# cmake -DROOT=<source dir> -P CheckLayers.cmake
# Fails when a file includes a header of a layer above its own. The layers,
# lowest first; a folder may include its own headers and those of the folders
# it lists:
#   common          -> (nothing of ours but generated protos)
#   plan            -> common
#   server/base     -> plan, common
#   server/storage  -> base, plan, common
#   server/ingest   -> storage, base, plan, common
#   server/serve    -> storage, base, plan, common
#   server/cluster  -> ingest, serve, storage, base, plan, common
#   server/rpc      -> cluster, ingest, serve, storage, base, plan, common
#   server/daemon   -> everything above
#   client          -> client, plan, common
set(allowed_common "common")
set(allowed_plan "common;plan")
set(allowed_server/base "common;plan;server/base")
set(allowed_server/storage "common;plan;server/base;server/storage")
set(allowed_server/ingest "common;plan;server/base;server/storage;server/ingest")
set(allowed_server/serve "common;plan;server/base;server/storage;server/serve")
set(allowed_server/cluster "common;plan;server/base;server/storage;server/ingest;server/serve;server/cluster")
set(allowed_server/rpc "common;plan;server/base;server/storage;server/ingest;server/serve;server/cluster;server/rpc")
set(allowed_server/daemon
    "common;plan;server/base;server/storage;server/ingest;server/serve;server/cluster;server/rpc;server/daemon")
set(allowed_client "common;plan;client")
set(layers common plan server/base server/storage server/ingest server/serve server/cluster server/rpc server/daemon
    client)
set(ours common plan server client)

set(violations "")
foreach(layer ${layers})
  file(GLOB_RECURSE sources "${ROOT}/${layer}/*.h" "${ROOT}/${layer}/*.cc")
  foreach(src ${sources})
    file(STRINGS "${src}" includes REGEX "^#include \"")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
      # Only headers of our own folders are judged (generated protos and
      # client/include's strata/ are not layers).
      set(is_ours FALSE)
      foreach(top ${ours})
        if(header MATCHES "^${top}/")
          set(is_ours TRUE)
        endif()
      endforeach()
      if(NOT is_ours)
        continue()
      endif()
      set(ok FALSE)
      foreach(dep ${allowed_${layer}})
        if(header MATCHES "^${dep}/")
          set(ok TRUE)
        endif()
      endforeach()
      if(NOT ok)
        file(RELATIVE_PATH rel "${ROOT}" "${src}")
        string(REPLACE ";" ", " may "${allowed_${layer}}")
        list(APPEND violations "${rel} includes ${header} (${layer} may include ${may})")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering violations:\n  ${text}")
endif()
message(STATUS "layers: every include points down")
