#!/bin/bash
# P6 item 1 repro: curl | head -c N at 20 offsets, each followed by a normal speech request (10 s limit).
# Usage: load-tests/repro/speech-disconnect.sh PORT API_KEY   (a server started with `npm start`)
PORT=$1; KEY=$2
BODY='{"model":"jifili-1","input":"i ni ce a b d e f g i ni ce a b d e f g","response_format":"wav"}'
ok=0; bad=0
for n in 1 100 500 1000 2000 3000 5000 8000 12000 16000 20000 30000 40000 50000 60000 70000 80000 90000 100000 200000; do
  curl -sN -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d "$BODY" http://127.0.0.1:$PORT/openai/v1/audio/speech | head -c $n >/dev/null
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d "$BODY" http://127.0.0.1:$PORT/openai/v1/audio/speech)
  if [ "$code" = 200 ]; then ok=$((ok+1)); else bad=$((bad+1)); echo "offset $n: next request -> $code"; fi
done
echo "served after disconnect: $ok/20 (failed $bad)"
