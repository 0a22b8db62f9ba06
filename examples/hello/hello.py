"""The bundled example: one allowed action and one denied one."""
import json
import os

print(json.dumps({"allowed": "import json", "GREETING": os.environ.get("GREETING")}))
print("USER visible inside the sandbox:", "USER" in os.environ)

try:
    import socket  # not in python-import=: refused by the guard
except ModuleNotFoundError as denied:
    print("denied:", denied)
