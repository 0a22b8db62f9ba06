# Work done in C: JSON, regular expressions, sorting, few Python calls.
import json
import re

data = [{"id": i, "name": "n%d" % i, "tags": ["a", "b", str(i % 10)]} for i in range(30000)]
text = json.dumps(data)
back = json.loads(text)
words = re.findall(r"n\d+", text)
print(len(words), sorted(back, key=lambda d: d["name"])[0]["id"])
