# Megatron-LM interleaved bubble (p-1)/(v*m) against pipette's interleaved-1f1b (idle / ideal).
# Inputs: data (columns p, v, m, formula, pipette), out (PNG).
set terminal pngcairo size 1000,700 font "Sans,11"
set output out
set termoption noenhanced
set title "Megatron-LM interleaved 1F1B: bubble time / ideal time = (p-1)/(v m)\n(pipette interleaved-1f1b, F = 1, B = 2, zero latency; p in {2,4,8,16}, v in {1,2,4}, m in {p,2p,4p,8p})"
set xlabel "(p-1)/(v m)  (formula)"
set ylabel "idle / ideal  (pipette)"
set logscale xy
set grid
set key left top
plot x with lines lc rgb "#000000" dt 2 title "y = x", \
     data using ($2 == 1 ? $4 : NaN):5 with points pt 7 ps 1.4 lc rgb "#0072B2" title "v = 1", \
     data using ($2 == 2 ? $4 : NaN):5 with points pt 5 ps 1.2 lc rgb "#E69F00" title "v = 2", \
     data using ($2 == 4 ? $4 : NaN):5 with points pt 9 ps 1.6 lc rgb "#009E73" title "v = 4"
