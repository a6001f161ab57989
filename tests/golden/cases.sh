# cases.sh: the reference runs of the byte-for-byte test (test_golden.sh).
# Sourced with $SCM set and the working directory holding copies of
# examples/*.json; each `case NAME CMD...` runs one command, keeping its
# stdout, stderr and exit status as NAME.out, NAME.err, NAME.rc next to the
# files it writes.  Small sizes: the whole list runs in seconds.

case_ run_relu_k2 "$SCM" run relu_k2.json -o relu_k2.result.json --csv relu_k2.csv
case_ run_euler_erf_k4 "$SCM" run euler_erf_k4.json -o euler_erf_k4.result.json
case_ run_not_a_run_config "$SCM" run simulate_erf_k4.json -o simulate_erf_k4.result.json
case_ run_linear "$SCM" run relu_k2.json -o linear.result.json --set model.activation=linear --set model.K=3
case_ run_two_layer "$SCM" run relu_k2.json -o two_layer.result.json --set rule=two_layer --set model.K=3
case_ run_normalised "$SCM" run relu_k2.json -o normalised.result.json --set rule=normalised --set model.M=3
case_ run_stiefel "$SCM" run relu_k2.json -o stiefel.result.json --set rule=stiefel --set model.K=3 --set model.M=3
case_ run_sgd "$SCM" run relu_k2.json -o sgd.result.json --set rule=sgd --set rule_params.eta=0.3 --set integrator.t_max=50
case_ run_gmres "$SCM" run relu_k2.json -o gmres.result.json --set model.K=5 --set model.M=4 --set integrator.linear_solver=gmres --set integrator.jtimes=lagged
case_ run_bad "$SCM" run relu_k2.json -o bad.result.json --set model.K=0

case_ fp_K4_M3 "$SCM" fixed-points --K 4 --M 3 -o fp_K4_M3.json
case_ fp_K4_M4_stab "$SCM" fixed-points --K 4 --M 4 --stability -o fp_K4_M4_stab.json
case_ fp_K6_M6_k1 "$SCM" fixed-points --K 6 --M 6 --k1 1 -o fp_K6_M6_k1.json
case_ fp_grow "$SCM" fixed-points --K 12 --M 12 --grow-from 6 -o fp_grow.json

printf '%s\n' '{"model": {"K": 3, "M": 3}, "init": {"seed": 7}, "integrator": {"linear_solver": "dense"}}' > sw.json
case_ sweep "$SCM" sweep sw.json --runs 8 -o sw.runs.jsonl --summary sw.summary.json
case_ sweep_shard0 "$SCM" sweep sw.json --runs 8 --shard 0/2 -o sw0.runs.jsonl
case_ sweep_shard1 "$SCM" sweep sw.json --runs 8 --shard 1/2 -o sw1.runs.jsonl
case_ merge "$SCM" merge sw0.runs.jsonl sw1.runs.jsonl -o merged.json
case_ sweep_fam "$SCM" sweep sw.json --runs 6 --families fp_K4_M4_stab.json --set model.K=4 --set model.M=4 -o swf.runs.jsonl --summary swf.summary.json

case_ compare "$SCM" compare --M 4 --K 4,5 --runs 10 --no-plots -o cmp
case_ compare_rules "$SCM" compare --M 3 --K 3,4 --runs 6 --rule gd,normalised --no-plots -o cmpr
case_ crosscheck "$SCM" crosscheck --K 4 --M 4 --runs 4 -o xc.json
case_ stability "$SCM" stability --K 4 --M 4 --k1 1 --index 0 -o stab.json
case_ stability_pick "$SCM" stability --K 4 --M 4 --k1 1
case_ stability_point "$SCM" stability --point fp_K4_M3.json --index 1 -o stab_point.json

printf '%s\n' '{"model": {"K": 2, "M": 2, "activation": "erf"}, "init": {"seed": 3},' \
    ' "integrator": {"t_first": 0.1, "n_out": 8},' \
    ' "simulate": {"d": 300, "seeds": 3, "eta": 0.2, "t_max": 2}}' > simcfg.json
case_ simulate "$SCM" simulate simcfg.json --no-plot -o sim
case_ simulate_sgd "$SCM" simulate simulate_erf_k4_sgd.json --no-plot --d 200 --seeds 2 --t-max 3 --threads 2 -o simsgd
case_ simulate_batch "$SCM" simulate simulate_erf_k4.json --no-plot --mode batch --n 400 --d 100 --seeds 2 --t-max 1 -o simb
case_ lintarget "$SCM" lintarget --alpha 1e-3 --c 0.5 -o lin
case_ split "$SCM" split --K 3 --M 3 --activation erf --index 2 --neuron 1 --lambda-grid 3 -o split.json
case_ staircase "$SCM" staircase --K 2 --M 2 --activation erf --alpha 1e-3,1e-4 -o stair.json
case_ certify "$SCM" certify --K 6 --M 6 --k1 1 -o certify.json
case_ map "$SCM" map --M 3 --dK 0:1 --runs 6 --no-plots -o map
