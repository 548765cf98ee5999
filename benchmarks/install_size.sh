#!/usr/bin/env bash
# Install sizes (issue 36): the core install and every extra in fresh virtual environments from a
# clone, the zoo predict in the core one, and a clone's .git size. Run from anywhere:
#   bash benchmarks/install_size.sh [REPO]   (prints "core N MB ...", "all N MB ...", the .git MB)
set -e
REPO="${1:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}"
rm -rf /tmp/sz && mkdir -p /tmp/sz && cd /tmp/sz
git clone -q "$REPO" src
for kind in core all; do
  python3 -m venv v-$kind
  v-$kind/bin/pip install -q --upgrade pip
  if [ $kind = core ]; then spec="./src"; else spec="./src[all]"; fi
  v-$kind/bin/pip install -q -c src/constraints.txt "$spec"
  echo "$kind $(du -sm v-$kind | cut -f1) MB $(v-$kind/bin/pip list 2>/dev/null | wc -l) packages"
done
v-core/bin/python - <<'P'
import tnpx, numpy as np, pandas as pd
m = tnpx.pretrained("gp1d-v2-tnp")
ctx = pd.DataFrame({"x": np.linspace(0, 1, 10), "y": np.sin(6 * np.linspace(0, 1, 10))})
print(tnpx.predict(m, ctx, pd.DataFrame({"x": [0.5, 0.55]})).round(3))
P
rm -rf /tmp/sz/clone && git clone -q --no-local "$REPO" /tmp/sz/clone && du -sm /tmp/sz/clone/.git
